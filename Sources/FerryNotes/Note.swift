import Foundation
import GRDB

/// One note as the app shows it.
///
/// ```swift
/// let note = try notes.show("3fa1")
/// print(note.title, note.tags, note.updatedAt)
/// ```
public struct Note: Codable, Sendable, Hashable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "note"

    public var id: String
    public var title: String
    public var body: String
    public var category: String?
    /// Tags, sorted, without duplicates.
    public var tags: [String]
    /// The writer's user id, kept on the note for list screens.
    public var author: String
    public var notebookID: String?
    /// `user:<id>`, or the notebook's shared scope.
    public var scope: String
    /// Milliseconds since 1970.
    public var createdAt: Int64
    public var updatedAt: Int64
    public var deletedAt: Int64?

    public var isDeleted: Bool { deletedAt != nil }

    public init(row: Row) throws {
        id = row["id"]
        title = row["title"]
        body = row["body"]
        category = row["category"]
        tags = Self.tags(from: row["tags"])
        author = row["author"]
        notebookID = row["notebook_id"]
        scope = row["scope"]
        createdAt = row["created_at"]
        updatedAt = row["updated_at"]
        deletedAt = row["deleted_at"]
    }

    public init(
        id: String, title: String, body: String, category: String?, tags: [String], author: String,
        notebookID: String?, scope: String, createdAt: Int64, updatedAt: Int64, deletedAt: Int64? = nil
    ) {
        self.id = id
        self.title = title
        self.body = body
        self.category = category
        self.tags = Self.normalized(tags)
        self.author = author
        self.notebookID = notebookID
        self.scope = scope
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.deletedAt = deletedAt
    }

    public func encode(to container: inout PersistenceContainer) throws {
        container["id"] = id
        container["title"] = title
        container["body"] = body
        container["category"] = category
        container["tags"] = Self.tagsText(tags)
        container["author"] = author
        container["notebook_id"] = notebookID
        container["scope"] = scope
        container["created_at"] = createdAt
        container["updated_at"] = updatedAt
        container["deleted_at"] = deletedAt
    }

    /// Tags as stored: a JSON array of strings.
    static func tagsText(_ tags: [String]) -> String {
        let data = (try? JSONEncoder().encode(normalized(tags))) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    static func tags(from text: String?) -> [String] {
        guard let data = text?.data(using: .utf8), let tags = try? JSONDecoder().decode([String].self, from: data) else { return [] }
        return normalized(tags)
    }

    /// Trimmed, non-empty, sorted, each once.
    static func normalized(_ tags: [String]) -> [String] {
        Array(Set(tags.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty })).sorted()
    }
}

/// A shared notebook: its notes sync to every member of its scope.
public struct Notebook: Codable, Sendable, Hashable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "notebook"
    public var id: String
    public var name: String
    public var scope: String
    public var owner: String
    public var createdAt: Int64

    // Columns in snake case (`created_at`), JSON in camel case like every `--json` key.
    public static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    public static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase
}

/// A category: a name and a colour.
public struct Category: Codable, Sendable, Hashable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "category"
    public var id: String
    public var name: String
    public var color: String?
}
