import Ferry
import FerryNotes
import Foundation
import Logging

/// Where the sync library's log lines go: never among a command's own
/// output. By default its warnings and errors are appended to
/// `<database>.log` beside the database (kept under 1 MiB); with
/// `--verbose`, everything from debug up goes to standard error, control
/// characters made visible. Lines written before the database is opened
/// go nowhere.
///
/// ```swift
/// NotesLog.bootstrap()                                   // first thing in main
/// NotesLog.route(verbose: false, database: "notes.sqlite")
/// ```
enum NotesLog {
    enum Destination {
        case nowhere
        case standardError
        /// The log file, opened at the first line written to it, and the bytes written since.
        case file(path: String, handle: FileHandle?, written: Int)
    }

    static let destination = Locked(Destination.nowhere)

    static func bootstrap() {
        LoggingSystem.bootstrap { label in NotesLogHandler(label: label) }
    }

    static func route(verbose: Bool, database: String) {
        destination.withLock { $0 = verbose ? .standardError : .file(path: database + ".log", handle: nil, written: 0) }
    }

    fileprivate static func write(_ line: String, level: Logger.Level) {
        let data = Data((TerminalText.line(line) + "\n").utf8)
        destination.withLock { destination in
            switch destination {
            case .nowhere:
                break
            case .standardError:
                try? FileHandle.standardError.write(contentsOf: data)
            case .file(let path, let handle, let written):
                guard level >= .warning else { return }
                // A log past 1 MiB starts afresh; one that cannot be written (a full disk) costs the line, never the command.
                var handle = written > 1 << 20 ? nil : handle
                if handle == nil {
                    if written > 1 << 20 { try? FileManager.default.removeItem(atPath: path) }
                    handle = open(path)
                }
                guard let handle else { return }
                try? handle.write(contentsOf: data)
                destination = .file(path: path, handle: handle, written: (written > 1 << 20 ? 0 : written) + data.count)
            }
        }
    }

    /// The log for appending, created 0600, started afresh past 1 MiB.
    private static func open(_ path: String) -> FileHandle? {
        let manager = FileManager.default
        if let size = (try? manager.attributesOfItem(atPath: path))?[.size] as? Int, size > 1 << 20 { try? manager.removeItem(atPath: path) }
        if !manager.fileExists(atPath: path) { manager.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) }
        guard let handle = FileHandle(forWritingAtPath: path) else { return nil }
        _ = try? handle.seekToEnd()
        return handle
    }
}

/// Formats a line as swift-log's stream handler does, and hands it to ``NotesLog``.
struct NotesLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .debug
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let fields = metadata.merging(event.metadata ?? [:]) { $1 }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let time = Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false))
        NotesLog.write(
            "\(time) \(event.level) \(label): \(fields.isEmpty ? "" : fields.joined(separator: " ") + " ")\(event.message)", level: event.level)
    }
}
