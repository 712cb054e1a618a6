import FerryProtocol
import FerryServer
import Foundation
import Hummingbird
import Logging

/// The real sync server without a socket: `FerryServer`'s router (its
/// authentication, request checks, rate limits and routes) over an SQLite
/// store, with the same merge and pull pipeline `ferry-server` runs,
/// answered in this process. An app's tests sync devices through it with
/// no port, no child process and nothing to stop but the store.
///
/// ```swift
/// let server = try await InMemorySyncServer()
/// let engine = try SyncEngine(
///     database: database, transport: server.transport,
///     configuration: SyncConfiguration(userID: "alice"), token: try await server.token(for: "alice"))
/// try await engine.sync()
/// let row = try await server.store.row(scope: "user:alice", table: "note", rowID: "n1")
/// try await server.close()
/// ```
///
/// What it leaves out is the connection layer: connection caps, read
/// deadlines and TLS belong to `ferry-server` and are tested there.
public final class InMemorySyncServer: Sendable {
    /// The store the server keeps its rows in: read it to check what the
    /// server holds.
    public let store: SQLiteSyncStore
    /// The configuration the router was built with.
    public let configuration: FerryServerConfiguration
    /// A transport that sends every request through the server's router.
    public let transport: InMemorySyncTransport
    private let directory: URL
    private let authority: TokenAuthority

    /// Starts a server on a fresh SQLite store in a temporary directory.
    ///
    /// - Parameter configure: changes the configuration (tables and their
    ///   policies, limits, rate limits) before the router is built. The
    ///   JWT secret is generated; ``token(for:lifetime:)`` mints tokens for it.
    public init(configure: (inout FerryServerConfiguration) -> Void = { _ in }) async throws {
        directory = FileManager.default.temporaryDirectory.appending(path: "ferry-in-memory-\(UUID().uuidString)")
        var configuration = FerryServerConfiguration(jwtSecret: Self.secret())
        configuration.rateLimits = .unlimited
        configure(&configuration)
        self.configuration = configuration
        do {
            store = try SQLiteSyncStore(directory: directory)
            var logger = Logger(label: "ferry-in-memory-server")
            logger.logLevel = .error
            let router = try await FerryApplication.makeRouter(configuration: configuration, store: store)
            transport = InMemorySyncTransport(responder: router.buildResponder(), logger: logger)
            authority = await TokenAuthority(secret: configuration.jwtSecret)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// A token for `userID`, as `ferry-server token` mints one.
    public func token(for userID: String, lifetime: Duration = .seconds(3600)) async throws -> String {
        try await authority.mint(userID: userID, lifetime: lifetime)
    }

    /// Closes the store and removes its directory. Live streams end.
    public func close() async throws {
        try await store.close()
        try? FileManager.default.removeItem(at: directory)
    }

    private static func secret() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<48).map { _ in String(UInt8.random(in: 0...15, using: &generator), radix: 16) }.joined()
    }
}
