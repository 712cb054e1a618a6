/// A shared scope as the admin API lists it: its owner and members.
public struct ScopeSummary: Sendable, Hashable, Codable {
    public var scope: String
    /// `nil` for a scope administrators created without an owner.
    public var owner: String?
    public var members: [ScopeMember]

    public init(scope: String, owner: String?, members: [ScopeMember]) {
        self.scope = scope
        self.owner = owner
        self.members = members
    }
}

/// A member of a shared scope and the role it holds.
public struct ScopeMember: Sendable, Hashable, Codable {
    public var userID: String
    public var role: ScopeRole

    public init(userID: String, role: ScopeRole) {
        self.userID = userID
        self.role = role
    }
}

/// The body of `POST /admin/v1/scopes`: a scope of any name but a personal
/// one, with an optional owner.
public struct AdminCreateScopeRequest: Sendable, Hashable, Codable {
    public var scope: String
    public var owner: String?

    public init(scope: String, owner: String? = nil) {
        self.scope = scope
        self.owner = owner
    }
}

/// A page of shared scopes (`GET /admin/v1/scopes`), by name.
public struct ScopeSummaryPage: Sendable, Hashable, Codable {
    public var scopes: [ScopeSummary]
    /// Pass as `after` for the next page; `nil` on the last.
    public var next: String?

    public init(scopes: [ScopeSummary], next: String?) {
        self.scopes = scopes
        self.next = next
    }
}

/// One row of a listing: its id and the server's copy.
public struct ListedRow: Sendable, Hashable, Codable {
    public var rowID: String
    public var version: Int64
    public var deleted: Bool
    public var values: [String: ColumnValue]
    /// When the server last changed it, in milliseconds since 1970.
    public var changedAt: Int64

    public init(rowID: String, version: Int64, deleted: Bool, values: [String: ColumnValue], changedAt: Int64) {
        self.rowID = rowID
        self.version = version
        self.deleted = deleted
        self.values = values
        self.changedAt = changedAt
    }
}

/// A page of a table's rows in one scope (`GET /admin/v1/rows/{scope}/{table}`), by row id.
public struct RowPage: Sendable, Hashable, Codable {
    public var rows: [ListedRow]
    /// Pass as `after` for the next page; `nil` on the last.
    public var next: String?

    public init(rows: [ListedRow], next: String?) {
        self.rows = rows
        self.next = next
    }
}

/// A page of the users the server has seen push, by id (`GET /admin/v1/users`).
public struct UserPage: Sendable, Hashable, Codable {
    public var users: [String]
    /// Pass as `after` for the next page; `nil` on the last.
    public var next: String?

    public init(users: [String], next: String?) {
        self.users = users
        self.next = next
    }
}

/// A device the server has seen push (`GET /admin/v1/users/{user}/devices`).
public struct DeviceSummary: Sendable, Hashable, Codable {
    public var clientID: String
    /// The last mutation the server applied from it.
    public var lastMutationID: Int64
    /// When the server last applied a push from it, in milliseconds since
    /// 1970; `nil` for a device that last pushed before this was recorded.
    public var lastPushAt: Int64?

    public init(clientID: String, lastMutationID: Int64, lastPushAt: Int64?) {
        self.clientID = clientID
        self.lastMutationID = lastMutationID
        self.lastPushAt = lastPushAt
    }
}

/// A user's devices, by client id.
public struct DeviceList: Sendable, Hashable, Codable {
    public var userID: String
    public var devices: [DeviceSummary]

    public init(userID: String, devices: [DeviceSummary]) {
        self.userID = userID
        self.devices = devices
    }
}
