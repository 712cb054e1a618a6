import FerryNotes
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs `$VISUAL` (or `$EDITOR`, else `vi`) on a temporary file holding
/// `text`, and returns what it holds after.
///
/// The editor runs in this process's group, so it holds the terminal as
/// the foreground job (Foundation's `Process` starts a group of its own,
/// and a terminal stops a background job that reads it). While it runs,
/// Ctrl-C is the editor's alone. The file is readable by its owner only, in
/// a folder of its own, and removed however the edit ends.
enum Editor {
    static func edit(_ text: String, name: String) throws -> String {
        let folder = FileManager.default.temporaryDirectory.appending(path: "ferry-notes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appending(path: name)
        guard FileManager.default.createFile(atPath: file.path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw NotesError(.failure, "cannot write the note to \(file.path) for the editor")
        }
        let environment = ProcessInfo.processInfo.environment
        let editor =
            environment["VISUAL"].flatMap { $0.isEmpty ? nil : $0 } ?? environment["EDITOR"].flatMap { $0.isEmpty ? nil : $0 } ?? "vi"
        let status = try run(["/bin/sh", "-c", "\(editor) \"$1\"", "sh", file.path])
        guard status == 0 else {
            throw NotesError(.failure, "\(editor) exited with status \(status); the note was not changed")
        }
        return try String(contentsOf: file, encoding: .utf8)
    }

    /// Runs `arguments` in this process group with Ctrl-C and Ctrl-\ going
    /// to it alone, and returns its exit status.
    private static func run(_ arguments: [String]) throws -> Int32 {
        // This process ignores them while the editor runs, so its cleanup runs.
        let interrupt = signal(SIGINT, SIG_IGN), quit = signal(SIGQUIT, SIG_IGN)
        defer {
            signal(SIGINT, interrupt)
            signal(SIGQUIT, quit)
        }
        return try ForegroundProcess.wait(try ForegroundProcess.spawn(arguments))
    }
}
