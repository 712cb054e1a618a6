import FerryProtocol
import Foundation

/// A conflict the server reported: what the column was (base), what this
/// user wrote (mine), what the server holds (theirs), and what the table's
/// policy did.
///
/// It comes one of two ways. A push reply reports the conflicts of this
/// device's own mutation (``overriddenBy`` is `nil`). A conflict notice, on a
/// pull, reports that a value this user had pushed, and the server had
/// applied, was later discarded by another writer who had not seen it: a
/// delete (kind `Conflict.Kind.updateLostToDelete`) or a write that won
/// under the table's policy (kind `Conflict.Kind.column`); ``overriddenBy``
/// names that writer's user. Every device of the user receives each notice
/// once, except the device whose own push did the overriding (its reply
/// told it already).
///
/// ```swift
/// for conflict in try database.conflicts.list() {
///     print(conflict.table, conflict.column ?? "row", conflict.base, conflict.mine, conflict.theirs)
/// }
/// ```
public struct SyncConflict: Sendable, Hashable, Identifiable {
    public var id: Int64
    public var table: String
    public var rowID: String
    public var scope: String
    public var kind: Conflict.Kind
    /// The column, or `nil` when the conflict is about the whole row.
    public var column: String?
    /// The column's value at the version this device edited (`nil`: none).
    public var base: ColumnValue?
    /// The value this device wrote (`nil` for a delete).
    public var mine: ColumnValue?
    /// The value the server holds (`nil` when the row is deleted there).
    public var theirs: ColumnValue?
    /// What the table's policy did: kept the server's value, kept this
    /// device's, or left it unresolved (`manual`).
    public var resolution: Conflict.Resolution
    /// The mutation the server reported it for (0 for a conflict notice: the
    /// discarded value may have come from another device of this user).
    public var mutationID: Int64
    /// When the report arrived.
    public var detectedAt: Date
    /// For a conflict notice: the user whose later write or delete discarded
    /// this user's value. `nil` for a conflict of this device's own push.
    public var overriddenBy: String?
    /// The row as the server held it when the report was made (a deleted
    /// row carries the values it last held), `nil` when unknown. Resolving
    /// builds on it, so a row this device does not hold can be re-created.
    public var serverRow: ServerRow?

    /// The server version the report came with; a resolution is based on it.
    var serverVersion: Int64?
    /// For an update lost to a delete: the local row's values when it happened.
    var rowValues: [String: ColumnValue]?
}

/// How the app settles a conflict. Each is an ordinary local write, synced
/// like any other.
public enum ConflictChoice: Sendable, Hashable {
    /// Keep this device's value (re-create the row if the server deleted it).
    case mine
    /// Take the server's value (delete the row if the server deleted it).
    case theirs
    /// Write these values instead (column → value).
    case merged([String: ColumnValue])
}
