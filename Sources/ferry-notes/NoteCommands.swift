import ArgumentParser
import Ferry
import FerryNotes
import Foundation

struct Add: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Add a note; prints its id.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The title.") var title: String
    @Option(help: "The body.") var body: String?
    @Option(name: .customLong("body-file"), help: "Read the body from a file (`-` for standard input).") var bodyFile: String?
    @Option(help: "A category.") var category: String?
    @Option(help: "A tag (repeatable).") var tag: [String] = []
    @Option(help: "Add it to a shared notebook.") var notebook: String?

    func run() async throws {
        let library = try global.library()
        var text = body ?? ""
        if let bodyFile {
            guard body == nil else { throw NotesError(.usage, "give --body or --body-file, not both") }
            text = try readText(bodyFile)
        }
        let note = try library.add(title: title, body: text, category: category, tags: tag, notebook: notebook)
        if let warning = NotesLibrary.sizeWarning(note) { tell("warning: \(warning)") }
        try global.printID(of: note)
    }
}

func readText(_ path: String) throws -> String {
    if path == "-" { return String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) }
    do {
        return String(decoding: try Data(contentsOf: URL(filePath: path)), as: UTF8.self)
    } catch {
        throw NotesError(.failure, "cannot read \(path): \(FileError.reason(error))")
    }
}

struct Edit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Change a note; with no field given on a terminal, opens $EDITOR on it.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The note's id (any unique prefix).") var id: String
    @Option(help: "A new title.") var title: String?
    @Option(help: "A new body.") var body: String?
    @Option(name: .customLong("body-file"), help: "Read the new body from a file (`-` for standard input).") var bodyFile: String?
    @Option(help: "Add this text at the end of the body, on a line of its own.") var append: String?
    @Option(help: "A category (an empty one clears it).") var category: String?
    @Option(name: .customLong("add-tag"), help: "Add a tag (repeatable).") var addTag: [String] = []
    @Option(name: .customLong("remove-tag"), help: "Remove a tag (repeatable).") var removeTag: [String] = []

    func run() async throws {
        let library = try global.library()
        guard [body != nil, bodyFile != nil, append != nil].filter({ $0 }).count <= 1 else {
            throw NotesError(.usage, "give one of --body, --body-file, --append")
        }
        var edit = NotesLibrary.Edit(
            title: title, body: try body ?? bodyFile.map(readText), category: category.map { $0.isEmpty ? nil : $0 },
            addTags: addTag, removeTags: removeTag, append: append)
        if edit.isEmpty {
            guard Terminal.isInteractive else {
                throw NotesError(
                    .usage, "give a field to change (--title, --body, --body-file, --append, --category, --add-tag, --remove-tag), or run on a terminal to use $EDITOR")
            }
            let note = try library.show(id)
            guard !note.isDeleted else {
                throw NotesError(.failure, "note \(note.id.prefix(8)) is in the trash; `ferry-notes restore \(note.id.prefix(8))` brings it back to edit")
            }
            let text = NoteText.render(note)
            let edited = try Editor.edit(text, name: "note-\(note.id.prefix(8)).txt")
            guard edited != text else { return tell("no change") }
            edit = try NoteText.parse(edited)
            edit.category = edit.category ?? .some(nil)
            let saved = try library.edit(note.id, edit)
            if let warning = NotesLibrary.sizeWarning(saved) { tell("warning: \(warning)") }
            try global.printID(of: saved)
            return
        }
        let saved = try library.edit(id, edit)
        if let warning = NotesLibrary.sizeWarning(saved) { tell("warning: \(warning)") }
        try global.printID(of: saved)
    }
}

struct Remove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Delete a note (`restore` brings it back).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The note's id (any unique prefix).") var id: String

    func run() async throws {
        let note = try global.library().remove(id)
        try global.printID(of: note)
    }
}

struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Bring back a deleted note.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The note's id (any unique prefix).") var id: String

    func run() async throws {
        let note = try global.library().restore(id)
        try global.printID(of: note)
    }
}

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "List notes, newest first, a page at a time.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var pager: PagerOptions
    @OptionGroup var only: NoteFilterOptions
    @Option(help: "Notes per page.") var limit = 50
    @Option(help: "Start after this cursor (printed at the end of the previous page).") var after: String?
    @Option(help: "Only notes changed since then: 2026-11-01, 2026-11-01T14:30, or an age such as 12h, 7d, 2w.") var since: String?
    @Option(help: "Only notes changed before then (the same forms as --since).") var until: String?
    @Flag(help: "List deleted notes instead.") var deleted = false
    @Option(help: "updated (newest change first), created (newest first) or title (A to Z).") var sort = "updated"
    @Flag(help: "Turn the order around (oldest first; Z to A).") var reverse = false

    func run() async throws {
        guard let order = NoteOrder(rawValue: sort) else { throw NotesError(.usage, "--sort must be updated, created or title") }
        let library = try global.library()
        pager.start()
        guard only.count + (deleted ? 1 : 0) <= 1 else { throw NotesError(.usage, "give one of --category, --tag, --notebook, --deleted") }
        guard (1...10_000).contains(limit) else { throw NotesError(.usage, "--limit must be 1–10000") }
        let filter: NoteQuery.Filter = try deleted ? .deleted : only.filter(library)
        var cursor: NoteCursor?
        if let after {
            guard let parsed = NoteCursor(text: after), parsed.fits(order) else {
                throw NotesError(.usage, "--after \(after) is not a cursor `ls --sort \(sort)` printed")
            }
            cursor = parsed
        }
        // One more than a page: a next page is offered only when a note is on it.
        let parsed = try NoteTime.options(since: since, until: until)
        let times = [parsed.since, parsed.until]
        var notes = try library.list(
            NoteQuery(filter: filter, order: order, reversed: reverse, limit: limit + 1, after: cursor, since: times[0], until: times[1]))
        let more = notes.count > limit
        if more { notes.removeLast() }
        let next = more ? notes.last.map { NoteCursor($0, order: order).text } : nil
        if global.json {
            struct Page: Encodable { var notes: [Note]; var next: String? }
            try global.printJSON(Page(notes: notes, next: next))
            return
        }
        guard !notes.isEmpty else { return tell("no notes") }
        for line in Terminal.table(notes) { print(line) }
        if let next {
            var again = [Suggestion.command("ls")]
            again += only.arguments
            if deleted { again.append("--deleted") }
            if order != .updated { again += ["--sort", sort] }
            if reverse { again.append("--reverse") }
            if limit != 50 { again += ["--limit", "\(limit)"] }
            // An age is fixed to the time it meant, so the next page continues the same list.
            if let since = times[0] { again += ["--since", Suggestion.quoted(NoteTime.text(since))] }
            if let until = times[1] { again += ["--until", Suggestion.quoted(NoteTime.text(until))] }
            tell("more: \((again + ["--after", next]).joined(separator: " "))")
        }
    }
}

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show one note.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var pager: PagerOptions
    @Argument(help: "The note's id (any unique prefix).") var id: String

    func run() async throws {
        let library = try global.library()
        pager.start()
        let note = try library.show(id)
        if global.json { return try global.printJSON(note) }
        print("\(note.title)\n")
        print("id        \(note.id)")
        print("updated   \(Terminal.time(note.updatedAt)) (created \(Terminal.time(note.createdAt)))")
        print("author    \(note.author)")
        if let category = note.category { print("category  \(category)") }
        if !note.tags.isEmpty { print("tags      \(note.tags.joined(separator: ", "))") }
        if let notebook = note.notebookID, let found = try library.notebooks().first(where: { $0.id == notebook }) {
            print("notebook  \(found.name)")
        }
        if note.isDeleted { print("deleted   \(Terminal.time(note.deletedAt ?? 0)) (`\(Suggestion.command("restore \(note.id.prefix(8))"))`)") }
        if !note.body.isEmpty { print("\n\(note.body)") }
    }
}

struct Tags: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Every tag in use, with how many notes carry it.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var pager: PagerOptions

    func run() async throws {
        pager.start()
        let tags = try global.library().tags()
        if global.json {
            struct Tag: Encodable { var tag: String; var notes: Int }
            return try global.printJSON(tags.map { Tag(tag: $0.tag, notes: $0.notes) })
        }
        guard !tags.isEmpty else { return tell("no tags") }
        let width = tags.map { TerminalText.cells($0.tag) }.max() ?? 0
        for (tag, notes) in tags { print("\(TerminalText.fit(tag, width))  \(notes)") }
    }
}

struct EmptyTrash: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "empty-trash", abstract: "Delete the notes in the trash for good, on every device at the next sync.")
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Do not ask first.") var yes = false

    func run() async throws {
        let library = try global.library()
        let count = try library.list(NoteQuery(filter: .deleted, limit: 10_001)).count
        guard count > 0 else { return tell("the trash is empty") }
        if !yes {
            guard Terminal.isInteractive else { throw NotesError(.usage, "add --yes to delete \(count) note(s) for good") }
            FileHandle.standardError.write(Data("delete \(count == 10_001 ? "over 10000" : "\(count)") note(s) for good? [y/N] ".utf8))
            guard let answer = readLine(), ["y", "yes"].contains(answer.lowercased()) else { throw NotesError(.failure, "the trash is kept") }
        }
        let removed = try library.emptyTrash()
        if global.json { try global.printJSON(["deleted": removed]) } else { print("deleted \(removed) note\(removed == 1 ? "" : "s") for good") }
    }
}

struct Cat: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a note's body alone: as it is into a pipe or file, control characters shown on a terminal.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var pager: PagerOptions
    @Argument(help: "The note's id (any unique prefix).") var id: String

    func run() async throws {
        pager.start()
        let body = try global.library().show(id).body
        let text = body.isEmpty || body.hasSuffix("\n") ? body : body + "\n"
        // The note's own bytes for a script; on a terminal, nothing it could obey.
        writeOut(Data((Terminal.isOutputInteractive ? TerminalText.safe(text) : text).utf8))
    }
}

struct Search: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Search titles, bodies and tags: every word as a prefix, accents ignored, best first.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var pager: PagerOptions
    @Argument(help: "Words to find (each as a prefix).") var query: String
    @OptionGroup var only: NoteFilterOptions
    @Option(help: "Only notes changed since then (as `ls --since`).") var since: String?
    @Option(help: "Only notes changed before then.") var until: String?
    @Option(help: "Notes per page.") var limit = 20
    @Option(help: "Which page of hits (1 is the best).") var page = 1

    func run() async throws {
        let library = try global.library()
        pager.start()
        guard only.count <= 1 else { throw NotesError(.usage, "give one of --category, --tag, --notebook") }
        guard (1...10_000).contains(limit) else { throw NotesError(.usage, "--limit must be 1–10000") }
        guard (1...1_000_000).contains(page) else { throw NotesError(.usage, "--page counts from 1 (to 1000000)") }
        let filter = try only.filter(library)
        let times = try NoteTime.options(since: since, until: until)
        let color = Terminal.usesColor && !global.json
        // One more than a page: a next page is offered only when a hit is on it.
        guard
            let search = NoteSearch(
                query, limit: limit + 1, offset: (page - 1) * limit, filter: filter, since: times.since, until: times.until,
                highlight: color ? (Style.hitStart, Style.hitEnd) : ("[", "]"))
        else { throw NotesError(.usage, "give a word to search for") }
        var hits = try library.search(search)
        let more = hits.count > limit
        if more { hits.removeLast() }
        if global.json {
            struct Hit: Encodable { var note: Note; var snippet: String; var rank: Double }
            return try global.printJSON(hits.map { Hit(note: $0.note, snippet: $0.snippet, rank: $0.rank) })
        }
        guard !hits.isEmpty else { return tell(page == 1 ? "no match" : "no more matches") }
        for hit in hits {
            print("\(hit.note.id.prefix(8))  \(hit.note.title)")
            print("          \(hit.snippet.replacingOccurrences(of: "\n", with: " "))")
        }
        if more {
            var again = [Suggestion.command("search"), Suggestion.quoted(query)] + only.arguments
            if let since = times.since { again += ["--since", Suggestion.quoted(NoteTime.text(since))] }
            if let until = times.until { again += ["--until", Suggestion.quoted(NoteTime.text(until))] }
            if limit != 20 { again += ["--limit", "\(limit)"] }
            tell("more: \((again + ["--page", "\(page + 1)"]).joined(separator: " "))")
        }
    }
}

/// `--category`, `--tag` and `--notebook`, on the commands that list notes.
struct NoteFilterOptions: ParsableArguments {
    @Option(help: "Only notes in this category.") var category: String?
    @Option(help: "Only notes with this tag.") var tag: String?
    @Option(help: "Only notes in this shared notebook.") var notebook: String?

    /// How many of the three were given.
    var count: Int { [category, tag, notebook].compactMap { $0 }.count }

    /// The filter the one given names (`.all` for none).
    ///
    /// - throws: ``NotesError`` `.notFound` for a notebook not on this device.
    func filter(_ library: NotesLibrary) throws -> NoteQuery.Filter {
        if let category { return .category(category) }
        if let tag { return .tag(tag) }
        if let notebook {
            guard let id = try library.notebooks().first(where: { $0.name == notebook })?.id else {
                throw NotesError(.notFound, "no notebook named \(notebook)")
            }
            return .notebook(id: id)
        }
        return .all
    }

    /// The options again, for a suggested command.
    var arguments: [String] {
        [("--category", category), ("--tag", tag), ("--notebook", notebook)].flatMap { name, value in
            value.map { [name, Suggestion.quoted($0)] } ?? []
        }
    }
}
