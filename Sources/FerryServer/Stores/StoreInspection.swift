import FerryProtocol

/// What the console (`/console` on the admin port) reads from a store to
/// answer "where did my edit go": one row's whole story, the latest
/// conflicts, and the store at a glance. Every ``SyncStore`` provides it.
///
/// ```swift
/// let story = try await store.inspectRow(scope: "family@alice", table: "notes", rowID: "n1")
/// for event in story.timeline { print(event.version ?? 0, event.summary) }
/// ```
public protocol StoreInspection: Sendable {
    /// The row's current values, every value it held before, and every
    /// conflict, notice and rejection the server recorded about it.
    func inspectRow(scope: String, table: String, rowID: String) async throws -> RowInspection

    /// The newest conflicts first, optionally of one user, scope, table or kind.
    func recentConflicts(_ filter: ConflictFilter, limit: Int) async throws -> [InspectedConflict]

    /// The newest conflict notices first (settlements left out), optionally
    /// of one user told, scope, table or kind.
    func recentNotices(_ filter: ConflictFilter, limit: Int) async throws -> [InspectedNotice]

    /// Counts, sizes and the schema version.
    func overview() async throws -> StoreOverview

    /// How many live rows each table of `scope` holds, and when it last changed.
    func scopeContents(_ scope: String) async throws -> ScopeContents

    /// Per device of `userID`: mutations the server set aside (rejected), and
    /// the user's conflict notices not yet settled.
    func userActivity(_ userID: String) async throws -> UserActivity
}

/// Everything a store knows about one row.
public struct RowInspection: Sendable, Hashable {
    public var scope: String
    public var table: String
    public var rowID: String
    /// The row as it stands; `nil` when the store never held it.
    public var current: InspectedRow?
    /// Values overwritten, with the writer when the store still knows it.
    public var history: [InspectedValue]
    public var conflicts: [InspectedConflict]
    public var notices: [InspectedNotice]
    public var rejections: [InspectedRejection]

    public init(
        scope: String, table: String, rowID: String, current: InspectedRow?, history: [InspectedValue], conflicts: [InspectedConflict],
        notices: [InspectedNotice], rejections: [InspectedRejection]
    ) {
        (self.scope, self.table, self.rowID, self.current) = (scope, table, rowID, current)
        (self.history, self.conflicts, self.notices, self.rejections) = (history, conflicts, notices, rejections)
    }

    /// One event of the row's story.
    public struct Event: Sendable, Hashable {
        public enum Kind: String, Sendable, Hashable { case current, overwritten, conflict, notice, rejection, deleted }
        public var kind: Kind
        /// The server version the event belongs to, when it has one.
        public var version: Int64?
        /// Milliseconds since 1970, when known.
        public var at: Int64?
        public var column: String?
        public var summary: String
        /// The user and device, when known.
        public var writer: String?
    }

    /// Every value, conflict, notice and rejection, oldest version first
    /// (events without a version last, by time).
    public var timeline: [Event] {
        var events: [Event] = []
        if let current {
            if current.deleted {
                events.append(
                    Event(
                        kind: .deleted, version: current.version, at: current.changedAt, column: nil,
                        summary: current.collected ? "deleted (tombstone collected into a deletion record)" : "deleted",
                        writer: current.clientID))
            }
            for cell in current.cells {
                events.append(
                    Event(
                        kind: .current, version: cell.version, at: cell.wallMilliseconds, column: cell.column, summary: "set to \(cell.value.display)",
                        writer: cell.clientID))
            }
        }
        for value in history {
            events.append(
                Event(
                    kind: .overwritten, version: value.version, at: value.writtenAt, column: value.column,
                    summary: "held \(value.value.display), later overwritten", writer: value.clientID))
        }
        for conflict in conflicts {
            events.append(
                Event(
                    kind: .conflict, version: conflict.version, at: conflict.createdAt, column: conflict.conflict.column,
                    summary: conflict.conflict.summary, writer: "\(conflict.userID) / \(conflict.clientID)"))
        }
        for notice in notices {
            events.append(
                Event(
                    kind: .notice, version: notice.version, at: notice.createdAt, column: notice.conflict?.column,
                    summary: notice.summary, writer: "\(notice.byUser) / \(notice.byClient)"))
        }
        for rejection in rejections {
            events.append(
                Event(
                    kind: .rejection, version: nil, at: rejection.createdAt, column: nil, summary: "rejected: \(rejection.reason)",
                    writer: "\(rejection.userID) / \(rejection.clientID)"))
        }
        return events.enumerated().sorted { a, b in
            switch (a.element.version, b.element.version) {
            case (let x?, let y?) where x != y: return x < y
            case (.some, nil): return true
            case (nil, .some): return false
            default:
                if a.element.at != b.element.at { return (a.element.at ?? 0) < (b.element.at ?? 0) }
                return a.offset < b.offset
            }
        }.map(\.element)
    }
}

/// A row as the store holds it now.
public struct InspectedRow: Sendable, Hashable {
    public var version: Int64
    public var deleted: Bool
    /// A tombstone folded into a deletion record by garbage collection.
    public var collected: Bool
    public var clientID: String
    public var changedAt: Int64
    public var cells: [InspectedCell]

    public init(version: Int64, deleted: Bool, collected: Bool, clientID: String, changedAt: Int64, cells: [InspectedCell]) {
        (self.version, self.deleted, self.collected, self.clientID, self.changedAt, self.cells) = (
            version, deleted, collected, clientID, changedAt, cells
        )
    }
}

/// One column's current value and who set it.
public struct InspectedCell: Sendable, Hashable {
    public var column: String
    public var value: ColumnValue
    public var version: Int64
    /// The writer's clock when it wrote the value (milliseconds since 1970).
    public var wallMilliseconds: Int64
    public var clientID: String

    public init(column: String, value: ColumnValue, version: Int64, wallMilliseconds: Int64, clientID: String) {
        (self.column, self.value, self.version, self.wallMilliseconds, self.clientID) = (column, value, version, wallMilliseconds, clientID)
    }
}

/// A value a column held before it was overwritten.
public struct InspectedValue: Sendable, Hashable {
    public var column: String
    public var version: Int64
    public var value: ColumnValue
    /// The client that wrote it (`user:client`); `nil` for a value
    /// overwritten before the store kept writers.
    public var clientID: String?
    /// The writer's clock when it wrote the value (milliseconds since 1970), when kept.
    public var writtenAt: Int64?

    public init(column: String, version: Int64, value: ColumnValue, clientID: String?, writtenAt: Int64?) {
        (self.column, self.version, self.value, self.clientID, self.writtenAt) = (column, version, value, clientID, writtenAt)
    }
}

/// A conflict the merge recorded for a pushing device.
public struct InspectedConflict: Sendable, Hashable {
    public var userID: String
    public var clientID: String
    public var mutationID: Int64
    public var scope: String
    public var table: String
    public var rowID: String
    public var version: Int64?
    public var conflict: Conflict
    public var createdAt: Int64

    public init(
        userID: String, clientID: String, mutationID: Int64, scope: String, table: String, rowID: String, version: Int64?, conflict: Conflict,
        createdAt: Int64
    ) {
        (self.userID, self.clientID, self.mutationID, self.scope, self.table, self.rowID) = (userID, clientID, mutationID, scope, table, rowID)
        (self.version, self.conflict, self.createdAt) = (version, conflict, createdAt)
    }
}

/// A conflict notice: a user's applied value a later write discarded.
public struct InspectedNotice: Sendable, Hashable {
    /// The user told.
    public var userID: String
    public var byUser: String
    public var byClient: String
    public var version: Int64
    /// `nil` for a settlement (the user resolved or dismissed a notice).
    public var conflict: Conflict?
    /// The public id of the notice this one settles.
    public var settles: String?
    public var createdAt: Int64
    public var scope: String
    /// The row the notice is about; `nil` for a settlement.
    public var table: String?
    public var rowID: String?

    public init(
        userID: String, byUser: String, byClient: String, version: Int64, conflict: Conflict?, settles: String?, createdAt: Int64,
        scope: String = "", table: String? = nil, rowID: String? = nil
    ) {
        (self.userID, self.byUser, self.byClient, self.version, self.conflict, self.settles, self.createdAt) = (
            userID, byUser, byClient, version, conflict, settles, createdAt
        )
        (self.scope, self.table, self.rowID) = (scope, table, rowID)
    }

    var summary: String {
        if let settles { return "\(userID) settled notice \(settles)" }
        return "\(userID) told: \(conflict?.summary ?? "a value was discarded")"
    }
}

/// A mutation the server refused and the device set aside.
public struct InspectedRejection: Sendable, Hashable {
    public var userID: String
    public var clientID: String
    public var mutationID: Int64
    public var scope: String
    public var table: String
    public var rowID: String
    public var reason: String
    public var createdAt: Int64

    public init(userID: String, clientID: String, mutationID: Int64, scope: String, table: String, rowID: String, reason: String, createdAt: Int64) {
        (self.userID, self.clientID, self.mutationID, self.scope, self.table, self.rowID, self.reason, self.createdAt) = (
            userID, clientID, mutationID, scope, table, rowID, reason, createdAt
        )
    }
}

/// Which conflicts ``StoreInspection/recentConflicts(_:limit:)`` returns.
public struct ConflictFilter: Sendable, Hashable {
    public var userID: String?
    public var scope: String?
    public var table: String?
    public var kind: Conflict.Kind?

    public init(userID: String? = nil, scope: String? = nil, table: String? = nil, kind: Conflict.Kind? = nil) {
        (self.userID, self.scope, self.table, self.kind) = (userID, scope, table, kind)
    }
}

/// A store at a glance.
public struct StoreOverview: Sendable, Hashable {
    /// "embedded SQLite" or "PostgreSQL".
    public var kind: String
    public var schemaVersion: String
    /// Bytes on disk (files, or the database's size), when known.
    public var sizeBytes: Int64?
    public var rows: Int64
    public var tombstones: Int64
    public var scopes: Int64
    public var users: Int64
    public var devices: Int64
    public var conflicts: Int64
    public var notices: Int64
    /// Server processes using the store (PostgreSQL: one per instance), each with its connections.
    public var instances: [StoreInstance]

    public init(
        kind: String, schemaVersion: String, sizeBytes: Int64?, rows: Int64, tombstones: Int64, scopes: Int64, users: Int64, devices: Int64,
        conflicts: Int64, notices: Int64, instances: [StoreInstance]
    ) {
        (self.kind, self.schemaVersion, self.sizeBytes, self.rows, self.tombstones) = (kind, schemaVersion, sizeBytes, rows, tombstones)
        (self.scopes, self.users, self.devices, self.conflicts, self.notices, self.instances) = (scopes, users, devices, conflicts, notices, instances)
    }
}

/// One server process on the store.
public struct StoreInstance: Sendable, Hashable {
    public var name: String
    public var connections: Int
    /// Milliseconds since 1970 when its oldest connection opened, when known.
    public var since: Int64?

    public init(name: String, connections: Int, since: Int64?) {
        (self.name, self.connections, self.since) = (name, connections, since)
    }
}

/// What one scope holds.
public struct ScopeContents: Sendable, Hashable {
    /// Live rows by table.
    public var tables: [String: Int64]
    /// The newest change (milliseconds since 1970), `nil` for an empty scope.
    public var lastChangedAt: Int64?

    public init(tables: [String: Int64], lastChangedAt: Int64?) {
        (self.tables, self.lastChangedAt) = (tables, lastChangedAt)
    }
}

/// A user's sync trouble at a glance.
public struct UserActivity: Sendable, Hashable {
    /// Rejected mutations by device.
    public var rejectionsByDevice: [String: Int64]
    /// Conflict notices to the user, settlements excluded.
    public var notices: Int64
    /// The scopes the user owns or is a member of.
    public var scopes: [String]

    public init(rejectionsByDevice: [String: Int64], notices: Int64, scopes: [String]) {
        (self.rejectionsByDevice, self.notices, self.scopes) = (rejectionsByDevice, notices, scopes)
    }
}

extension Conflict {
    /// One line for a person: what collided and which value stays.
    public var summary: String {
        let column = column.map { "`\($0)`" } ?? "the row"
        let what: String
        switch kind {
        case .column: what = "\(column): sent \(local?.display ?? "nothing"), server held \(server?.display ?? "nothing")"
        case .updateLostToDelete: what = "an update of \(column) lost to a delete"
        case .deleteOverrodeUpdate: what = "a delete overrode a change to \(column)"
        }
        let outcome: String
        switch resolution {
        case .keptServer: outcome = "kept the server's value"
        case .keptLocal: outcome = "kept the sent value"
        case .unresolved: outcome = "unresolved, waiting for the app"
        }
        return "\(what); \(outcome)"
    }
}

extension ColumnValue {
    /// The value as a person reads it: text quoted, blobs by size.
    public var display: String {
        switch self {
        case .null: return "NULL"
        case .integer(let value): return String(value)
        case .real(let value): return String(value)
        case .text(let value): return "\"\(value)\""
        case .blob(let value): return "<\(value.count) bytes>"
        }
    }
}
