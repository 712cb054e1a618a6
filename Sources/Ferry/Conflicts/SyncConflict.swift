import FerryProtocol
import Foundation

/// A conflict the server reported for one of this device's mutations: what
/// the column was (base), what this device wrote (mine), what the server
/// holds (theirs), and what the table's policy did.
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
    /// The mutation the server reported it for.
    public var mutationID: Int64
    /// When the report arrived.
    public var detectedAt: Date

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
