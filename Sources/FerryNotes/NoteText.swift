/// A note as text for `$EDITOR`, and back: header lines, a blank line,
/// then the body.
///
/// ```
/// Title: Groceries
/// Category: home
/// Tags: errands, weekly
///
/// milk, eggs
/// ```
///
/// ```swift
/// let text = NoteText.render(note)
/// let edit = try NoteText.parse(editedText)   // a NotesLibrary.Edit
/// ```
public enum NoteText {
    public static func render(_ note: Note) -> String {
        """
        Title: \(note.title)
        Category: \(note.category ?? "")
        Tags: \(note.tags.joined(separator: ", "))

        \(note.body)

        """
    }

    /// Reads edited text back.
    ///
    /// - throws: ``NotesError`` `.usage` when the title line is missing or empty.
    public static func parse(_ text: String) throws -> NotesLibrary.Edit {
        var title: String?
        var category: String?? = .some(nil)
        var tags: [String] = []
        var lines = text.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false)[...]
        // Headers are the known ones at the top; the first other line (or the blank one) starts the body.
        while let line = lines.first, let colon = line.firstIndex(of: ":"),
            case let key = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased(), ["title", "category", "tags"].contains(key)
        {
            lines = lines.dropFirst()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            switch key {
            case "title": title = value
            case "category": category = .some(value.isEmpty ? nil : value)
            default: tags = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            }
        }
        if lines.first?.trimmingCharacters(in: .whitespaces).isEmpty == true { lines = lines.dropFirst() }
        guard let title, !title.isEmpty else { throw NotesError(.usage, "the edited note has no `Title:` line; nothing was changed") }
        var body = lines.joined(separator: "\n")
        if body.hasSuffix("\n") { body.removeLast() }
        return NotesLibrary.Edit(title: title, body: body, category: category, tags: tags)
    }
}
