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
    struct Exported: Codable {
        var id: String
        var title: String
        var body: String
        var category: String?
        var tags: [String]
        var notebook: String?
        var author: String?
        var created_at: Int64
        var updated_at: Int64
        var deleted_at: Int64?
    }

    /// Writes every note (deleted ones too) to `url`: a `.jsonl` file, or a
    /// folder of `<id>.md` files. Returns how many.
    @discardableResult
    public func exportNotes(to url: URL, format: ExportFormat) throws -> Int {
        let (notes, notebooks) = try database.read { db in
            (
                try Note.order(Column("created_at"), Column("id")).fetchAll(db),
                Dictionary(try Notebook.fetchAll(db).map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
            )
        }
        let exported = notes.map { note in
            Exported(
                id: note.id, title: note.title, body: note.body, category: note.category, tags: note.tags,
                notebook: note.notebookID.flatMap { notebooks[$0] }, author: note.author, created_at: note.createdAt,
                updated_at: note.updatedAt, deleted_at: note.deletedAt)
        }
        switch format {
        case .jsonl:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            var text = Data()
            for note in exported {
                text.append(try encoder.encode(note))
                text.append(0x0A)
            }
            try text.write(to: url, options: .atomic)
        case .markdown:
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            for note in exported {
                try Data(MarkdownNote.render(note).utf8).write(to: url.appending(path: "\(note.id).md"), options: .atomic)
            }
        }
        return exported.count
    }

    /// Reads notes from a `.jsonl` file or a folder of Markdown files. A
    /// note whose id exists here already is updated; notebooks are matched
    /// by name (a note naming one not on this device goes to the user's own
    /// notes). Returns how many were imported.
    ///
    /// - throws: ``NotesError`` `.usage` naming the file and line of a note
    ///   that cannot be read (nothing after it is imported; what came
    ///   before, in whole batches, is).
    @discardableResult
    public func importNotes(from url: URL, batchSize: Int = 500, progress: (Int) -> Void = { _ in }) throws -> Int {
        let session = try requireSession()
        var batch: [Exported] = []
        var done = 0
        func flush() throws {
            guard !batch.isEmpty else { return }
            let notes = batch
            try database.write { db in
                let notebooks = Dictionary(try Notebook.fetchAll(db).map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
                for item in notes {
                    let id = item.id.isEmpty ? Self.newID() : item.id.lowercased()
                    // A note already here stays in its scope: a row never moves between scopes.
                    let existing = try Note.fetchOne(db, key: id)
                    let notebook = item.notebook.flatMap { notebooks[$0] }
                    let scope = existing?.scope ?? notebook?.scope ?? "user:\(session.user)"
                    try Self.requireWritable(scope, db)
                    let note = Note(
                        id: id, title: item.title, body: item.body,
                        category: item.category, tags: item.tags, author: item.author ?? session.user,
                        notebookID: existing == nil ? notebook?.id : existing?.notebookID, scope: scope,
                        createdAt: item.created_at, updatedAt: max(item.updated_at, 0), deletedAt: item.deleted_at)
                    try note.save(db)
                    try Self.ensureCategory(note.category, db)
                }
            }
            done += notes.count
            batch.removeAll(keepingCapacity: true)
            progress(done)
        }
        if FileKind.isFolder(url) {
            let files = try FileManager.default.contentsOfDirectory(atPath: url.path).filter { $0.hasSuffix(".md") }.sorted()
            for name in files {
                let text = try String(contentsOf: url.appending(path: name), encoding: .utf8)
                batch.append(try MarkdownNote.parse(text, name: name, now: clock()))
                if batch.count >= batchSize { try flush() }
            }
        } else {
            let decoder = JSONDecoder()
            var number = 0
            for line in try LineReader(url: url) {
                number += 1
                guard !line.trimmingCharacters(in: .whitespaces).isEmpty else { continue }
                do {
                    batch.append(try decoder.decode(Exported.self, from: Data(line.utf8)))
                } catch {
                    throw NotesError(.usage, "\(url.lastPathComponent):\(number): not a note (\(error))")
                }
                if batch.count >= batchSize { try flush() }
            }
        }
        try flush()
        return done
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
        lines.append("created: \(note.created_at)")
        lines.append("updated: \(note.updated_at)")
        if let deleted = note.deleted_at { lines.append("deleted: \(deleted)") }
        lines.append("---")
        return lines.joined(separator: "\n") + "\n" + note.body
    }

    static func parse(_ text: String, name: String, now: Int64) throws -> NotesLibrary.Exported {
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
        return NotesLibrary.Exported(
            id: fields["id"] ?? "", title: fields["title"].map(unquoted) ?? fallbackTitle, body: body,
            category: fields["category"].map(unquoted), tags: tags, notebook: fields["notebook"].map(unquoted),
            author: fields["author"].map(unquoted), created_at: fields["created"].flatMap { Int64($0) } ?? now,
            updated_at: fields["updated"].flatMap { Int64($0) } ?? now, deleted_at: fields["deleted"].flatMap { Int64($0) })
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
