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

    static func jsonLines(_ exported: [Exported]) throws -> Data {
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
    /// note whose id exists here already is updated in place (and sent
    /// again at the next sync), so importing the same file or folder twice
    /// never doubles a note (a Markdown file without an id gets one from
    /// its name). A notebook named that is not on this device is created,
    /// as `notebook create` does (sync first to file notes into a shared
    /// notebook that has not reached this device yet). With `keepExisting`,
    /// a note whose id is here already is left as it is (restoring a saved
    /// export after a sync fetched the newer copies). Returns how many were
    /// written.
    ///
    /// All or nothing: every note is read before any is written, and all
    /// are written in one transaction, telling `progress` every
    /// `batchSize` notes.
    ///
    /// - throws: ``NotesError`` `.failure` naming the bad lines (up to
    ///   five, each with everything wrong in it), or what stopped the write;
    ///   either way nothing was imported.
    @discardableResult
    public func importNotes(
        from url: URL, batchSize: Int = 500, keepExisting: Bool = false, progress: (Int) -> Void = { _ in }
    ) throws -> Int {
        let notes = try Self.readImport(url, now: clock())
        let now = clock()
        var written = 0
        do {
            try database.write { db in
                let writer = try writer(db)
                var notebooks = Dictionary(try Notebook.fetchAll(db).map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
                for (index, item) in notes.enumerated() {
                    let id = item.id.isEmpty ? Self.newID() : item.id.lowercased()
                    // A note already here stays in its scope: a row never moves between scopes.
                    let existing = try Note.fetchOne(db, key: id)
                    if existing != nil, keepExisting { continue }
                    var notebook = item.notebook.flatMap { notebooks[$0] }
                    if existing == nil, notebook == nil, let name = item.notebook {
                        guard writer.scope != Self.unclaimedScope else {
                            throw NotesError(.notSignedIn, "note \(index + 1) goes in notebook \(name): notebooks are shared on a server, so `ferry-notes login` first")
                        }
                        let made = try Self.makeNotebook(name, owner: writer.user, now: now, db)
                        notebooks[name] = made
                        notebook = made
                    }
                    let scope = existing?.scope ?? notebook?.scope ?? writer.scope
                    try Self.requireWritable(scope, db)
                    let note = Note(
                        id: id, title: item.title, body: item.body,
                        category: item.category, tags: item.tags,
                        // "me": written before a sign-in (an export or salvage of an unclaimed note) is the writer's now.
                        author: item.author.flatMap { $0 == Self.unclaimedAuthor ? nil : $0 } ?? writer.user,
                        notebookID: existing == nil ? notebook?.id : existing?.notebookID, scope: scope,
                        createdAt: item.createdAt, updatedAt: max(item.updatedAt, 0), deletedAt: item.deletedAt)
                    try note.save(db)
                    written += 1
                    if (index + 1) % batchSize == 0 { progress(index + 1) }
                }
            }
        } catch {
            let reason = (error as? NotesError)?.message ?? "\(error)"
            throw NotesError((error as? NotesError)?.code ?? .failure, "nothing imported: \(reason)")
        }
        progress(notes.count)
        return written
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
