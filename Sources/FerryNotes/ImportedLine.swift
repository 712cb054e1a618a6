import Foundation

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
