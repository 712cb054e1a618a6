import FerryProtocol
import GRDB

extension SQLiteSyncStore {
    public func membership(of userID: String, in scope: String) async throws -> ScopeMembership? {
        try await read { db in
            guard let owner = try Row.fetchOne(db, sql: "SELECT owner FROM scopes WHERE scope = ?", arguments: [scope])
            else { return nil }
            if (owner["owner"] as String?) == userID {
                return ScopeMembership(scope: scope, role: .write, owner: true)
            }
            let role = try String.fetchOne(
                db,
                sql: "SELECT role FROM members WHERE scope = ? AND user_id = ?",
                arguments: [scope, userID]
            )
            return role.flatMap(ScopeRole.init(rawValue:)).map { ScopeMembership(scope: scope, role: $0, owner: false) }
        }
    }

    public func readers(of scope: String) async throws -> ScopeReaders? {
        try await read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT owner FROM scopes WHERE scope = ?", arguments: [scope]) else { return nil }
            var members: [String: ScopeRole] = [:]
            for member in try Row.fetchAll(db, sql: "SELECT user_id, role FROM members WHERE scope = ?", arguments: [scope]) {
                if let role = ScopeRole(rawValue: member["role"]) { members[member["user_id"]] = role }
            }
            return ScopeReaders(scope: scope, owner: row["owner"], members: members)
        }
    }

    public func memberships(of userID: String) async throws -> [ScopeMembership] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT scope, 'write' AS role, 1 AS owner FROM scopes WHERE owner = ?
                    UNION ALL
                    SELECT m.scope, m.role, 0 FROM members m JOIN scopes s USING (scope)
                    WHERE m.user_id = ? AND s.owner IS NOT ?
                    ORDER BY scope
                    """,
                arguments: [userID, userID, userID]
            ).compactMap { row in
                ScopeRole(rawValue: row["role"]).map { ScopeMembership(scope: row["scope"], role: $0, owner: row["owner"]) }
            }
        }
    }

    public func createScope(_ scope: String, owner: String?) async throws {
        try await write { db in
            do {
                try db.execute(sql: "INSERT INTO scopes (scope, owner) VALUES (?, ?)", arguments: [scope, owner])
            } catch DatabaseError.SQLITE_CONSTRAINT {
                throw FerryServerError(.alreadyExists, "scope `\(scope)` already exists")
            }
        }
    }

    public func setMember(_ userID: String, role: ScopeRole, in scope: String) async throws {
        try await write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM scopes WHERE scope = ?", arguments: [scope]) == true else {
                throw FerryServerError(.notFound, "scope `\(scope)` does not exist")
            }
            try db.execute(
                sql: """
                    INSERT INTO members (scope, user_id, role) VALUES (?, ?, ?)
                    ON CONFLICT (scope, user_id) DO UPDATE SET role = excluded.role
                    """,
                arguments: [scope, userID, role.rawValue]
            )
        }
    }
}
