import ArgumentParser
import Ferry
import FerryNotes
import Foundation
import GRDB

/// `ferry-notes`: offline-first notes on Ferry.
@main
struct FerryNotesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ferry-notes",
        abstract: "Notes that work offline on every device and sync when a server is reachable.",
        discussion: """
            Every command but `sync` and `watch` works offline. Ids are accepted by any unique prefix.

            Exit codes:
              0   success
              1   failure (the message says why)
              3   no such note, notebook, attachment or conflict
              4   an id prefix that names several (the candidates are listed)
              5   not signed in (`login` first; it works offline)
              6   the server is unreachable (nothing is lost: changes stay queued)
              7   the server refused the token, the request, or a change (`rejected` lists those)
              64  a usage error
            """,
        version: "ferry-notes 0.1.0",
        subcommands: [
            Login.self, Logout.self, Add.self, Edit.self, Remove.self, Restore.self, EmptyTrash.self, List.self, Show.self, Cat.self, Search.self, Tags.self,
            Attach.self, AttachmentsList.self, OpenAttachment.self, Detach.self, NotebookCommand.self, Sync.self, Watch.self,
            CategoryCommand.self, Conflicts.self, Resolve.self, Rejected.self, Status.self, Import.self, Export.self,
        ])

    static func main() async {
        NotesLog.bootstrap()
        do {
            let arguments = Array(CommandLine.arguments.dropFirst())
            if let unknown = unknownCommand(in: arguments) { throw unknown }
            var command = try parseAsRoot(globalOptionsLast(arguments))
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
            try? GlobalOptions.opened.withLock { $0 }?.recordTimings()
        } catch let error as NotesError {
            fail(error.message, code: error.code.rawValue)
        } catch let error as FerryError {
            fail(error.message, code: 1)
        } catch let error as DatabaseError {
            let path = GlobalOptions.openedPath.withLock { $0 } ?? "the notes database"
            fail(DatabaseProblem.explain(error, database: path)?.message ?? "database error: \(error)", code: 1)
        } catch let error as CocoaError {
            fail(FileError.reason(error), code: 1)
        } catch {
            exit(withError: error)
        }
    }

    /// `--db PATH`, `--json` and `--verbose` given before the command (`ferry-notes --db x ls`)
    /// moved after it, where every command takes them.
    static func globalOptionsLast(_ arguments: [String]) -> [String] {
        var leading: [String] = []
        var rest = arguments[...]
        while let first = rest.first {
            if first == "--json" || first == "--verbose" {
                leading.append(first)
                rest = rest.dropFirst()
            } else if first == "--db", rest.count > 1 {
                leading += rest.prefix(2)
                rest = rest.dropFirst(2)
            } else if first.hasPrefix("--db=") {
                leading.append(first)
                rest = rest.dropFirst()
            } else {
                break
            }
        }
        return Array(rest) + leading
    }

    /// A first word that is no command (`ferry-notes lss --db x`): said as
    /// such, with the command meant, not as whatever option follows it.
    static func unknownCommand(in arguments: [String]) -> NotesError? {
        var rest = arguments[...]
        while let first = rest.first, first.hasPrefix("-") {
            // The argument parser's own: its value is no command.
            if first == "--generate-completion-script" { return nil }
            rest = rest.dropFirst(first == "--db" ? 2 : 1)
        }
        guard let word = rest.first else { return nil }
        let names = configuration.subcommands.compactMap { $0.configuration.commandName ?? $0._commandName } + ["help"]
        guard !names.contains(word) else { return nil }
        let near = names.min { Suggestion.distance($0, word) < Suggestion.distance($1, word) }
        let hint = near.map { Suggestion.distance($0, word) <= 2 ? " (did you mean `\($0)`?)" : "" } ?? ""
        return NotesError(.usage, "`\(word)` is not a command\(hint); `ferry-notes --help` lists them")
    }

    static func fail(_ message: String, code: Int32) -> Never {
        // The error after whatever the pager shows, on the terminal itself.
        Pager.finish()
        FileHandle.standardError.write(Data("ferry-notes: \(TerminalText.line(Suggestion.naming(message)))\n".utf8))
        Foundation.exit(code)
    }
}

/// `--db` and `--json`, on every command.
struct GlobalOptions: ParsableArguments {
    @Option(help: "The notes database (default: $FERRY_NOTES_DB, else notes.sqlite in the user's application-support folder).")
    var db: String?

    @Flag(help: "Print machine-readable JSON.")
    var json = false

    @Flag(help: "Write the sync library's log (debug and up) to standard error; without it, warnings go to <database>.log.")
    var verbose = false

    var path: String {
        if let db { return db }
        if let path = ProcessInfo.processInfo.environment["FERRY_NOTES_DB"], !path.isEmpty { return path }
        let folder =
            (FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? URL(filePath: NSHomeDirectory()).appending(path: ".local/share")).appending(path: "ferry-notes")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder.appending(path: "notes.sqlite").path
    }

    func library() throws -> NotesLibrary {
        let url = URL(filePath: path)
        guard FileManager.default.fileExists(atPath: url.deletingLastPathComponent().path) else {
            throw NotesError(.failure, "no folder \(url.deletingLastPathComponent().path) for the database")
        }
        if let db { Suggestion.given(database: db) }
        NotesLog.route(verbose: verbose, database: path)
        Self.openedPath.withLock { $0 = path }
        let library: NotesLibrary
        do {
            library = try NotesLibrary(path: path)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_READONLY {
            // Another user's file, or a read-only folder: reading commands still work.
            library = try NotesLibrary(readOnlyPath: path)
        }
        Self.opened.withLock { $0 = library }
        return library
    }

    /// The database this run opens, for messages about it.
    static let openedPath = Locked<String?>(nil)

    /// The database this run opened, whose timings are kept as it ends.
    static let opened = Locked<NotesLibrary?>(nil)

    /// A note a command wrote: as JSON, or its id alone (for scripts: `ID=$(ferry-notes add …)`).
    func printID(of note: Note) throws {
        if json { try printJSON(note) } else { print(note.id) }
    }

    func printJSON(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // JSON escapes C0 controls itself; DEL and C1 are escaped here too, so the text stays the data, exactly.
        Swift.print(TerminalText.jsonSafe(String(decoding: try encoder.encode(value), as: UTF8.self)))
    }
}
