import FerryProtocol

/// Everyone a shared scope names, read at one moment: its owner and its
/// members with their roles. A live change to a scope with a thousand
/// streams reads it once (with the page it shares) instead of checking each
/// stream's membership on its own.
///
/// ```swift
/// let readers = ScopeReaders(scope: "crew@alice", owner: "alice", members: ["bob": .read])
/// readers.membership(of: "bob")     // read, not owner: what `membership(of:in:)` answers
/// readers.membership(of: "carol")   // nil
/// ```
public struct ScopeReaders: Sendable, Hashable {
    public var scope: String
    /// `nil` when no user owns the scope (administrators manage it).
    public var owner: String?
    public var members: [String: ScopeRole]

    public init(scope: String, owner: String?, members: [String: ScopeRole]) {
        self.scope = scope
        self.owner = owner
        self.members = members
    }

    /// What ``SyncStore/membership(of:in:)`` answered for `userID` at the moment these were read.
    public func membership(of userID: String) -> ScopeMembership? {
        if owner == userID { return ScopeMembership(scope: scope, role: .write, owner: true) }
        return members[userID].map { ScopeMembership(scope: scope, role: $0, owner: false) }
    }
}
