@testable import FerryServer
import FerryProtocol
import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import FerryTestSupport

/// A real SQLite store in a temporary directory, the real router over it,
/// and tokens for test users.
struct TestServer {
    static let secret = "test-secret-0123456789abcdef-0123456789"

    let directory: TemporaryDirectory
    let store: SQLiteSyncStore
    let configuration: FerryServerConfiguration
    let authority: TokenAuthority
    let metrics = ServerMetrics()

    init(configure: (inout FerryServerConfiguration) -> Void = { _ in }) async throws {
        directory = try TemporaryDirectory()
        store = try SQLiteSyncStore(directory: directory.url)
        var configuration = FerryServerConfiguration(jwtSecret: Self.secret)
        configuration.port = 0
        configure(&configuration)
        self.configuration = configuration
        authority = await TokenAuthority(secret: Self.secret)
    }

    func token(_ user: String) async throws -> String {
        try await authority.mint(userID: user, lifetime: .seconds(600))
    }

    func application() async throws -> some ApplicationProtocol {
        try await FerryApplication.build(configuration: configuration, store: store, metrics: metrics)
    }

    /// Runs `body` against the router, no socket.
    func withClient(_ body: @Sendable @escaping (any TestClientProtocol) async throws -> Void) async throws {
        let router = try await FerryApplication.makeRouter(configuration: configuration, store: store, metrics: metrics)
        let app = Application(router: router)
        try await app.test(.router) { client in try await body(client) }
    }

    /// Every stored row of every store table, in order: equal digests mean
    /// nothing changed.
    func digest() async throws -> String {
        try await store.pool.read { db in
            var lines: [String] = []
            for table in ["store_meta", "rows", "history", "clients", "results", "conflicts", "rejections", "scopes", "members"] {
                for row in try Row.fetchAll(db, sql: "SELECT * FROM \(table) ORDER BY 1, 2") {
                    lines.append("\(table): \(row)")
                }
            }
            return lines.joined(separator: "\n")
        }
    }
}

/// Requests as a client sends them.
extension TestClientProtocol {
    func send(
        _ method: HTTPRequest.Method,
        _ uri: String,
        token: String? = nil,
        json: String? = nil
    ) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await execute(uri: uri, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) })
    }

    func send(_ method: HTTPRequest.Method, _ uri: String, token: String?, body: some Encodable) async throws -> TestResponse {
        let json = String(decoding: try JSONEncoder().encode(body), as: UTF8.self)
        return try await send(method, uri, token: token, json: json)
    }
}

extension TestResponse {
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
    }

    var text: String { String(buffer: body) }
}

/// Mutations for tests.
enum Mutations {
    static var stamp: HLCTimestamp { HLCTimestamp(wallMilliseconds: Int64(Date().timeIntervalSince1970 * 1000), counter: 0) }

    static func upsert(
        _ id: Int64,
        row: String = "r1",
        scope: String = "user:alice",
        table: String = "note",
        _ columns: [String: ColumnValue],
        base: Int64? = nil,
        hlc: HLCTimestamp = Mutations.stamp
    ) -> Mutation {
        Mutation(mutationID: id, table: table, rowID: row, scope: scope, operation: .upsert, columns: columns, baseVersion: base, hlc: hlc)
    }

    static func delete(_ id: Int64, row: String = "r1", scope: String = "user:alice", base: Int64?) -> Mutation {
        Mutation(mutationID: id, table: "note", rowID: row, scope: scope, operation: .delete, baseVersion: base, hlc: stamp)
    }
}
