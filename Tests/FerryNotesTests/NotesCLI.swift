import Ferry
import FerryTestSupport
import Foundation

/// The built `ferry-notes` binary, run as a user runs it: one database
/// file per device, output captured.
struct NotesCLI: Sendable {
    let database: String
    var environment: [String: String] = [:]
    /// Another user to run as (through `runuser`, which needs root).
    var user: String?
    /// The binary that user runs.
    var userExecutable: URL?

    init(database: String, environment: [String: String] = [:]) {
        self.database = database
        self.environment = environment
    }

    /// A device named `name`: its database file in `directory`, a 120-column terminal.
    init(device name: String, in directory: TemporaryDirectory) {
        self.init(database: directory.path("\(name).sqlite"), environment: ["COLUMNS": "120"])
    }

    /// The same device, run as `user` from a copy of the binary in
    /// `folder` (the build folder may sit in a directory only its owner
    /// enters; `folder` and the path to it must be open to `user`).
    func `as`(user: String, copyingBinaryInto folder: URL) throws -> NotesCLI {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let copy = folder.appending(path: "ferry-notes")
        if !FileManager.default.fileExists(atPath: copy.path) { try FileManager.default.copyItem(at: try Self.executable(), to: copy) }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: copy.path)
        var other = self
        other.user = user
        other.userExecutable = copy
        return other
    }

    struct Result: Sendable, CustomStringConvertible {
        var status: Int32
        var output: String
        var errors: String
        var description: String { "exit \(status)\nstdout: \(output)\nstderr: \(errors)" }
        var lines: [String] { output.split(separator: "\n").map(String.init) }
    }

    /// Runs `ferry-notes arguments… --db <database>` to completion.
    @discardableResult
    func run(_ arguments: [String], input: String? = nil) throws -> Result {
        let process = Process()
        if let user {
            process.executableURL = URL(filePath: "/usr/sbin/runuser")
            process.arguments = ["-u", user, "--", try (userExecutable ?? Self.executable()).path] + arguments + ["--db", database]
        } else {
            process.executableURL = try Self.executable()
            process.arguments = arguments + ["--db", database]
        }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe(), errors = Pipe(), stdin = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = stdin
        try process.run()
        if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
        try? stdin.fileHandleForWriting.close()
        // Read both pipes while the process runs, so neither fills: stderr on
        // a dispatch thread (never the test's own task pool), stdout here.
        let errorData = Locked(Data())
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            let data = errors.fileHandleForReading.readDataToEndOfFile()
            errorData.withLock { $0 = data }
            group.leave()
        }
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
            errors: String(decoding: errorData.withLock { $0 }, as: UTF8.self))
    }

    /// Runs and expects success, returning standard output trimmed.
    func ok(_ arguments: [String], input: String? = nil) throws -> String {
        let result = try run(arguments, input: input)
        guard result.status == 0 else { throw Failure(command: arguments, result: result) }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    struct Failure: Error, CustomStringConvertible {
        var command: [String]
        var result: Result
        var description: String { "ferry-notes \(command.joined(separator: " ")) failed: \(result)" }
    }

    static func executable() throws -> URL {
        try ServerProcess.executable().deletingLastPathComponent().appending(path: "ferry-notes")
    }

}

/// A `ferry-server` child process on a free port, with a known secret, and
/// tokens for any user.
final class NotesServer: @unchecked Sendable {
    let process: ServerProcess
    let url: String
    let secret = "notes-test-secret-0123456789abcdef"
    let dataDirectory: TemporaryDirectory

    /// Starts `ferry-server serve`; with `dataDirectory` and `port`, on an
    /// earlier server's data and port (a restart).
    init(arguments: [String] = [], dataDirectory: TemporaryDirectory? = nil, port: Int = 0) async throws {
        self.dataDirectory = try dataDirectory ?? TemporaryDirectory()
        process = try ServerProcess(
            [
                "serve", "--port", "\(port)", "--data-dir", self.dataDirectory.path("data"),
                "--jwt-secret", secret,
            ] + arguments)
        let line = try await process.waitForLine(startingWith: "Ferry server listening on ")
        url = String(line.dropFirst("Ferry server listening on ".count).split(separator: " ").first ?? "")
    }

    func token(_ user: String, lifetime: String? = nil) throws -> String {
        try ServerProcess.token(for: user, secret: secret, lifetime: lifetime)
    }

    /// The port it listens on.
    var port: Int { URL(string: url)?.port ?? 0 }

    func stop() { process.stop() }
}
