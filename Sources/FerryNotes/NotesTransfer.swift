import Foundation
import GRDB

/// `import` and `export`: JSON Lines (one note per line) or a folder of
/// Markdown files with front matter, each round-tripping through the other
/// command. Imports run in transactions of 500 notes, telling `progress`
/// after each.
///
/// ```swift
/// let count = try notes.importNotes(from: URL(filePath: "notes.jsonl")) { done in print(done) }
/// try notes.exportNotes(to: URL(filePath: "backup"), format: .markdown)
/// ```
extension NotesLibrary {
    public enum ExportFormat: String, Sendable, CaseIterable {
        case jsonl, markdown
    }

    /// A note as exported: ids and times kept, the notebook by name.
    struct Exported: Encodable {
        var id: String
        var title: String
        var body: String
        var category: String?
        var tags: [String]
        var notebook: String?
        var author: String?
        var createdAt: Int64
        var updatedAt: Int64
        var deletedAt: Int64?
    }

    private func exportedNotes() throws -> [Exported] {
        let (notes, notebooks) = try database.read { db in
            (
                try Note.order(Column("created_at"), Column("id")).fetchAll(db),
                Dictionary(try Notebook.fetchAll(db).map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
            )
        }
        return notes.map { note in
            Exported(
                id: note.id, title: note.title, body: note.body, category: note.category, tags: note.tags,
                notebook: note.notebookID.flatMap { notebooks[$0] }, author: note.author, createdAt: note.createdAt,
                updatedAt: note.updatedAt, deletedAt: note.deletedAt)
        }
    }

    /// Every note (deleted ones too) as JSON Lines, as `export --out -` prints them.
    public func exportedLines() throws -> Data {
        try Self.jsonLines(exportedNotes())
    }

    private static func jsonLines(_ exported: [Exported]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var text = Data()
        for note in exported {
            text.append(try encoder.encode(note))
            text.append(0x0A)
        }
        return text
    }

    /// Writes every note (deleted ones too) to `url`: a `.jsonl` file, or a
    /// folder of `<id>.md` files. Returns how many.
    @discardableResult
    public func exportNotes(to url: URL, format: ExportFormat) throws -> Int {
        let exported = try exportedNotes()
        switch format {
        case .jsonl:
            try Self.jsonLines(exported).write(to: url, options: .atomic)
        case .markdown:
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            for note in exported {
                try Data(MarkdownNote.render(note).utf8).write(to: url.appending(path: "\(note.id).md"), options: .atomic)
            }
        }
        return exported.count
    }

    /// Reads notes from a `.jsonl` file or a folder of Markdown files. A
    /// note whose id exists here already is updated, so importing the same
    /// file or folder again changes nothing (a Markdown file without an id
    /// gets one from its name). A notebook named that is not on this
    /// device is created, as `notebook create` does. Returns how many were
    /// imported.
    ///
    /// Every note is read before any is written: a file with a bad note
    /// imports nothing, and the error names each bad line (up to five) with
    /// everything wrong in it.
    ///
    /// - throws: ``NotesError`` `.failure` naming the bad lines, or, if
    ///   writing fails part way, how many notes went in.
    @discardableResult
    public func importNotes(from url: URL, batchSize: Int = 500, progress: (Int) -> Void = { _ in }) throws -> Int {
        let session = try requireSession()
        let notes = try Self.readImport(url, now: clock())
        var done = 0
        for batch in stride(from: 0, to: notes.count, by: batchSize).map({ notes[$0..<min($0 + batchSize, notes.count)] }) {
            do {
                try database.write { db in
                    var notebooks = Dictionary(try Notebook.fetchAll(db).map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
                    for item in batch {
                        let id = item.id.isEmpty ? Self.newID() : item.id.lowercased()
                        // A note already here stays in its scope: a row never moves between scopes.
                        let existing = try Note.fetchOne(db, key: id)
                        var notebook = item.notebook.flatMap { notebooks[$0] }
                        if existing == nil, notebook == nil, let name = item.notebook {
                            let made = try Self.makeNotebook(name, owner: session.user, now: clock(), db)
                            notebooks[name] = made
                            notebook = made
                        }
                        let scope = existing?.scope ?? notebook?.scope ?? "user:\(session.user)"
                        try Self.requireWritable(scope, db)
                        let note = Note(
                            id: id, title: item.title, body: item.body,
                            category: item.category, tags: item.tags, author: item.author ?? session.user,
                            notebookID: existing == nil ? notebook?.id : existing?.notebookID, scope: scope,
                            createdAt: item.createdAt, updatedAt: max(item.updatedAt, 0), deletedAt: item.deletedAt)
                        try note.save(db)
                    }
                }
            } catch {
                guard done > 0 else { throw error }
                let reason = (error as? NotesError)?.message ?? "\(error)"
                throw NotesError(.failure, "imported \(done) of \(notes.count) notes, then stopped: \(reason); importing the file again finishes it")
            }
            done += batch.count
            progress(done)
        }
        return done
    }

    /// Every note of a `.jsonl` file or a Markdown folder, checked.
    static func readImport(_ url: URL, now: Int64) throws -> [Exported] {
        var notes: [Exported] = []
        var problems: [String] = []
        if FileKind.isFolder(url) {
            let files = try FileManager.default.contentsOfDirectory(atPath: url.path).filter { $0.hasSuffix(".md") }.sorted()
            for name in files {
                let text = try String(contentsOf: url.appending(path: name), encoding: .utf8)
                notes.append(MarkdownNote.parse(text, name: name, now: now))
            }
        } else {
            var number = 0
            for line in try LineReader(url: url) {
                number += 1
                guard !line.trimmingCharacters(in: .whitespaces).isEmpty else { continue }
                switch ImportedLine.read(line, now: now) {
                case .success(let note): notes.append(note)
                case .failure(let problem): problems.append("\(url.lastPathComponent):\(number): \(problem.message)")
                }
            }
        }
        guard problems.isEmpty else {
            let shown = problems.prefix(5).joined(separator: "; ") + (problems.count > 5 ? "; and \(problems.count - 5) more bad lines" : "")
            throw NotesError(.failure, "nothing imported: \(shown)")
        }
        return notes
    }
}

/// One line of a JSON Lines import, read leniently and checked whole:
/// only `title` is needed; `id`, `body`, `category`, `tags`, `notebook`,
/// `author` and the times (`createdAt` or `created_at`, milliseconds) may
/// be left out, and every problem with a line is said at once.
///
/// ```swift
/// ImportedLine.read(#"{"title": "Hi", "tags": ["a"]}"#, now: 0)   // .success
/// ImportedLine.read(#"{"tags": "a"}"#, now: 0)   // .failure: missing title; tags must be a list of text
/// ```
enum ImportedLine {
    struct Problem: Error {
        var message: String
    }

    static func read(_ line: String, now: Int64) -> Result<NotesLibrary.Exported, Problem> {
        guard case .object(let object)? = try? JSONDecoder().decode(Value.self, from: Data(line.utf8)) else {
            return .failure(Problem(message: "not a JSON object"))
        }
        var problems: [String] = []
        func text(_ key: String, needed: Bool = false) -> String? {
            switch object[key] {
            case nil, .null?:
                if needed { problems.append("missing \(key)") }
                return nil
            case .text(let value)?:
                if needed, value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { problems.append("\(key) is empty") }
                return value
            default:
                problems.append("\(key) must be text")
                return nil
            }
        }
        func time(_ keys: String...) -> Int64? {
            for key in keys {
                switch object[key] {
                case nil, .null?: continue
                case .integer(let value)?: return value
                default:
                    problems.append("\(key) must be milliseconds since 1970 (a whole number)")
                    return nil
                }
            }
            return nil
        }
        let title = text("title", needed: true)
        var tags: [String] = []
        switch object["tags"] {
        case nil, .null?: break
        case .list(let values)?:
            let texts = values.compactMap { if case .text(let tag) = $0 { tag } else { nil } }
            if texts.count == values.count { tags = texts } else { problems.append("tags must be a list of text") }
        default: problems.append("tags must be a list of text")
        }
        let note = NotesLibrary.Exported(
            id: text("id") ?? "", title: title ?? "", body: text("body") ?? "", category: text("category"), tags: tags,
            notebook: text("notebook"), author: text("author"), createdAt: time("createdAt", "created_at") ?? now,
            updatedAt: time("updatedAt", "updated_at") ?? now, deletedAt: time("deletedAt", "deleted_at"))
        return problems.isEmpty ? .success(note) : .failure(Problem(message: problems.joined(separator: "; ")))
    }

    /// Any JSON value, told apart exactly (a `true` is no number).
    indirect enum Value: Decodable {
        case null, bool(Bool), integer(Int64), number(Double), text(String), list([Value]), object([String: Value])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Int64.self) {
                self = .integer(value)
            } else if let value = try? container.decode(Double.self) {
                self = .number(value)
            } else if let value = try? container.decode(String.self) {
                self = .text(value)
            } else if let value = try? container.decode([Value].self) {
                self = .list(value)
            } else {
                self = .object(try container.decode([String: Value].self))
            }
        }
    }
}

enum FileKind {
    static func isFolder(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }
}

/// A note as a Markdown file: YAML-style front matter, then the body.
enum MarkdownNote {
    static func render(_ note: NotesLibrary.Exported) -> String {
        var lines = ["---", "id: \(note.id)", "title: \(quoted(note.title))"]
        if let category = note.category { lines.append("category: \(quoted(category))") }
        lines.append("tags: [\(note.tags.map(quoted).joined(separator: ", "))]")
        if let notebook = note.notebook { lines.append("notebook: \(quoted(notebook))") }
        if let author = note.author { lines.append("author: \(quoted(author))") }
        lines.append("created: \(note.createdAt)")
        lines.append("updated: \(note.updatedAt)")
        if let deleted = note.deletedAt { lines.append("deleted: \(deleted)") }
        lines.append("---")
        return lines.joined(separator: "\n") + "\n" + note.body
    }

    static func parse(_ text: String, name: String, now: Int64) -> NotesLibrary.Exported {
        let lines = text.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false)
        var fields: [String: String] = [:]
        var bodyStart = 0
        if lines.first == "---", let end = lines.dropFirst().firstIndex(of: "---") {
            for line in lines[1..<end] {
                guard let colon = line.firstIndex(of: ":") else { continue }
                fields[line[..<colon].trimmingCharacters(in: .whitespaces)] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            bodyStart = end + 1
        }
        let body = lines[bodyStart...].joined(separator: "\n")
        let fallbackTitle = (name as NSString).deletingPathExtension
        let tagsText = fields["tags"] ?? "[]"
        let tags =
            (try? JSONDecoder().decode([String].self, from: Data(tagsText.utf8)))
            ?? tagsText.trimmingCharacters(in: CharacterSet(charactersIn: "[] ")).split(separator: ",")
            .map { unquoted(String($0).trimmingCharacters(in: .whitespaces)) }
        // A file without an id gets one from its name: importing the folder again updates, never doubles.
        return NotesLibrary.Exported(
            id: fields["id"].map(unquoted) ?? stableID(name), title: fields["title"].map(unquoted) ?? fallbackTitle, body: body,
            category: fields["category"].map(unquoted), tags: tags, notebook: fields["notebook"].map(unquoted),
            author: fields["author"].map(unquoted), createdAt: fields["created"].flatMap { Int64($0) } ?? now,
            updatedAt: fields["updated"].flatMap { Int64($0) } ?? now, deletedAt: fields["deleted"].flatMap { Int64($0) })
    }

    /// 16 hex digits from a file's name (FNV-1a), the same on every import.
    static func stableID(_ name: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "md:\(name)".utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return String(format: "%016llx", hash)
    }

    /// A value as a JSON string (also valid YAML), so any text round-trips.
    static func quoted(_ text: String) -> String {
        String(decoding: (try? JSONEncoder().encode(text)) ?? Data(), as: UTF8.self)
    }

    static func unquoted(_ text: String) -> String {
        guard text.hasPrefix("\""), let value = try? JSONDecoder().decode(String.self, from: Data(text.utf8)) else { return text }
        return value
    }
}

/// The lines of a file, read a chunk at a time.
struct LineReader: Sequence, IteratorProtocol {
    private let handle: FileHandle
    private var buffer = Data()
    private var done = false

    init(url: URL) throws {
        do {
            handle = try FileHandle(forReadingFrom: url)
        } catch {
            throw NotesError(.notFound, "cannot read \(url.path)")
        }
    }

    mutating func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = buffer[buffer.startIndex..<newline]
                buffer = Data(buffer[buffer.index(after: newline)...])
                return String(decoding: line, as: UTF8.self)
            }
            if done {
                guard !buffer.isEmpty else { return nil }
                defer { buffer = Data() }
                return String(decoding: buffer, as: UTF8.self)
            }
            if let chunk = try? handle.read(upToCount: 1 << 20), !chunk.isEmpty {
                buffer.append(chunk)
            } else {
                done = true
                try? handle.close()
            }
        }
    }
}
