import FerryProtocol
import FerryServer
import PostgresNIO

extension PostgresSyncStore {
    public func membership(of userID: String, in scope: String) async throws -> ScopeMembership? {
        let logger = self.logger
        return try await transaction(.oneStatement) { connection, _ in
            let query: PostgresQuery = """
                SELECT s.owner, m.role FROM ferry_scopes s
                LEFT JOIN ferry_members m ON m.scope = s.scope AND m.user_id = \(userID)
                WHERE s.scope = \(scope)
                """
            for try await (owner, role) in try await connection.query(query, logger: logger).decode((String?, String?).self) {
                if owner == userID {
                    return ScopeMembership(scope: scope, role: .write, owner: true)
                }
                return role.flatMap(ScopeRole.init(rawValue:)).map { ScopeMembership(scope: scope, role: $0, owner: false) }
            }
            return nil
        }
    }

    /// The scope's owner and members, in one statement (a live page of a
    /// shared scope reads them once it has its rows).
    public func readers(of scope: String) async throws -> ScopeReaders? {
        let logger = self.logger
        return try await transaction(.oneStatement) { connection, _ in
            let query: PostgresQuery = """
                SELECT s.owner, m.user_id, m.role FROM ferry_scopes s
                LEFT JOIN ferry_members m ON m.scope = s.scope
                WHERE s.scope = \(scope)
                """
            var found = false
            var owner: String?
            var members: [String: ScopeRole] = [:]
            for try await (scopeOwner, user, role) in try await connection.query(query, logger: logger).decode((String?, String?, String?).self) {
                found = true
                owner = scopeOwner
                if let user, let role = role.flatMap(ScopeRole.init(rawValue:)) { members[user] = role }
            }
            return found ? ScopeReaders(scope: scope, owner: owner, members: members) : nil
        }
    }

    public func memberships(of userID: String) async throws -> [ScopeMembership] {
        let logger = self.logger
        return try await transaction(.snapshot) { connection, _ in
            let query: PostgresQuery = """
                SELECT scope, 'write' AS role, true AS owner FROM ferry_scopes WHERE owner = \(userID)
                UNION ALL
                SELECT m.scope, m.role, false FROM ferry_members m JOIN ferry_scopes s USING (scope)
                WHERE m.user_id = \(userID) AND s.owner IS DISTINCT FROM \(userID)
                ORDER BY scope
                """
            var memberships: [ScopeMembership] = []
            for try await (scope, role, owner) in try await connection.query(query, logger: logger).decode((String, String, Bool).self) {
                if let role = ScopeRole(rawValue: role) {
                    memberships.append(ScopeMembership(scope: scope, role: role, owner: owner))
                }
            }
            return memberships
        }
    }

    public func createScope(_ scope: String, owner: String?) async throws {
        let logger = self.logger
        try await transaction(.serializable) { connection, _ in
            let query: PostgresQuery = "INSERT INTO ferry_scopes (scope, owner) VALUES (\(scope), \(owner)) ON CONFLICT (scope) DO NOTHING RETURNING scope"
            guard try await Self.one(connection, query, as: String.self, logger: logger) != nil else {
                throw FerryServerError(.alreadyExists, "scope `\(scope)` already exists")
            }
        }
    }

    public func setMember(_ userID: String, role: ScopeRole, in scope: String) async throws {
        let logger = self.logger
        try await transaction(.serializable) { connection, _ in
            guard try await Self.one(connection, "SELECT scope FROM ferry_scopes WHERE scope = \(scope)", as: String.self, logger: logger) != nil else {
                throw FerryServerError(.notFound, "scope `\(scope)` does not exist")
            }
            try await connection.query(
                """
                INSERT INTO ferry_members (scope, user_id, role) VALUES (\(scope), \(userID), \(role.rawValue))
                ON CONFLICT (scope, user_id) DO UPDATE SET role = excluded.role
                """, logger: logger)
        }
    }
}
