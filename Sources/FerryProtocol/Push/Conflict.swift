/// A value the server's merge did not keep, recorded so no edit vanishes.
///
/// A value that is absent (the column did not exist at the base, or the row
/// was deleted) is `nil`; a SQL NULL is `.null`.
///
/// ```swift
/// if conflict.kind == .column, conflict.resolution == .unresolved {
///     // a `manual` table: show base, local and server to the user
/// }
/// ```
public struct Conflict: Sendable, Hashable, Codable {
    /// What collided.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// Both sides changed the same column to different values.
        case column
        /// The client updated a row that was deleted concurrently; the delete won.
        case updateLostToDelete
        /// The client deleted a row whose column another client changed; the delete won.
        case deleteOverrodeUpdate
    }

    /// Which side's value the row holds now.
    public enum Resolution: String, Sendable, Hashable, Codable, CaseIterable {
        case keptServer
        case keptLocal
        /// `manual` policy: the server value stays until the app resolves it.
        case unresolved
    }

    public var kind: Kind
    /// The column, or `nil` for a row-level conflict with no column values.
    public var column: String?
    /// The column's value at the mutation's base version, when the server still knows it.
    public var base: ColumnValue?
    /// The value the client sent.
    public var local: ColumnValue?
    /// The value the server held.
    public var server: ColumnValue?
    public var resolution: Resolution
    /// In a push reply: the conflict notice the same loss sent to the
    /// user's other devices (the client overrode a value its own user had
    /// written elsewhere). Settling this conflict settles that notice on
    /// every device of the user. `nil` otherwise.
    public var noticeID: String?

    public init(
        kind: Kind,
        column: String?,
        base: ColumnValue?,
        local: ColumnValue?,
        server: ColumnValue?,
        resolution: Resolution,
        noticeID: String? = nil
    ) {
        self.kind = kind
        self.column = column
        self.base = base
        self.local = local
        self.server = server
        self.resolution = resolution
        self.noticeID = noticeID
    }

    private enum CodingKeys: String, CodingKey {
        case kind, column, base, local, server, resolution, noticeID
    }

    // Synthesized decoding would read `"base": null` as absent; here a present
    // null is SQL NULL and only a missing key is absent.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decode(Kind.self, forKey: .kind)
        column = try container.decodeIfPresent(String.self, forKey: .column)
        base = container.contains(.base) ? try container.decode(ColumnValue.self, forKey: .base) : nil
        local = container.contains(.local) ? try container.decode(ColumnValue.self, forKey: .local) : nil
        server = container.contains(.server) ? try container.decode(ColumnValue.self, forKey: .server) : nil
        resolution = try container.decode(Resolution.self, forKey: .resolution)
        noticeID = try container.decodeIfPresent(String.self, forKey: .noticeID)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encodeIfPresent(column, forKey: .column)
        try container.encodeIfPresent(base, forKey: .base)
        try container.encodeIfPresent(local, forKey: .local)
        try container.encodeIfPresent(server, forKey: .server)
        try container.encode(resolution, forKey: .resolution)
        try container.encodeIfPresent(noticeID, forKey: .noticeID)
    }
}
