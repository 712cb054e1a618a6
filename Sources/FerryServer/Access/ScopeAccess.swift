import FerryProtocol

/// Who may do what in a scope (ARCHITECTURE.md server semantic 7), as a pure rule.
///
/// A user owns `user:<id>` and may write it; nobody else may touch it. In a
/// shared scope, the owner writes and members have the role they were given.
enum ScopeAccess {
    /// The role `userID` has in `scope`, given its stored membership (if
    /// any) and the role its token grants (if any): the higher of the two.
    /// A token never grants a personal scope.
    static func role(of userID: String, in scope: String, membership: ScopeMembership?, granted: ScopeRole? = nil) -> ScopeRole? {
        if let owner = ScopeName.owner(of: scope) {
            return owner == userID ? .write : nil
        }
        let stored = membership.map { $0.owner ? ScopeRole.write : $0.role }
        return [stored, granted].compactMap { $0 }.max()
    }
}
