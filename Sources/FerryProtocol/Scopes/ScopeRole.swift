/// What a member may do in a scope. `write` includes `read`.
///
/// ```swift
/// if role >= .write { /* may push */ }
/// ```
public enum ScopeRole: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    case read
    case write

    public static func < (lhs: ScopeRole, rhs: ScopeRole) -> Bool {
        lhs == .read && rhs == .write
    }
}

/// One scope the caller belongs to, as listed by `GET /v1/scopes`.
public struct ScopeMembership: Sendable, Hashable, Codable {
    public var scope: String
    public var role: ScopeRole
    /// The caller owns the scope and may add members.
    public var owner: Bool

    public init(scope: String, role: ScopeRole, owner: Bool) {
        self.scope = scope
        self.role = role
        self.owner = owner
    }
}

/// The reply to `GET /v1/scopes`.
public struct ScopeList: Sendable, Hashable, Codable {
    public var scopes: [ScopeMembership]

    public init(scopes: [ScopeMembership]) {
        self.scopes = scopes
    }
}

/// The body of `POST /v1/scopes`: create a shared scope owned by the caller.
public struct CreateScopeRequest: Sendable, Hashable, Codable {
    public var scope: String

    public init(scope: String) {
        self.scope = scope
    }
}

/// The body of `PUT /v1/scopes/{scope}/members/{user}`.
public struct MemberRequest: Sendable, Hashable, Codable {
    public var role: ScopeRole

    public init(role: ScopeRole) {
        self.role = role
    }
}
