import Foundation

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
