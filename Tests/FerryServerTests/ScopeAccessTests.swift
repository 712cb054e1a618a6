@testable import FerryServer
import FerryProtocol
import Testing

/// Who may do what in a scope, as a pure rule: stored memberships and a
/// token's grants, the higher role winning; personal scopes are their
/// owner's alone, whatever a token says.
@Suite struct ScopeAccessTests {
    @Test func aGrantRaisesAStoredRoleButNeverOpensAPersonalScope() {
        let reader = ScopeMembership(scope: "team:x@olga", role: .read, owner: false)
        #expect(ScopeAccess.role(of: "rita", in: "team:x@olga", membership: nil) == nil)
        #expect(ScopeAccess.role(of: "rita", in: "team:x@olga", membership: reader) == .read)
        #expect(ScopeAccess.role(of: "rita", in: "team:x@olga", membership: reader, granted: .write) == .write)
        #expect(ScopeAccess.role(of: "rita", in: "team:x@olga", membership: nil, granted: .read) == .read)
        let owner = ScopeMembership(scope: "team:x@olga", role: .read, owner: true)
        #expect(ScopeAccess.role(of: "olga", in: "team:x@olga", membership: owner, granted: .read) == .write)
        #expect(ScopeAccess.role(of: "rita", in: "user:bob", membership: nil, granted: .write) == nil)
        #expect(ScopeAccess.role(of: "bob", in: "user:bob", membership: nil) == .write)
    }
}
