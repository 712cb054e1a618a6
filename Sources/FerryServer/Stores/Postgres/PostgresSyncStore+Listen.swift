import Foundation
import NIOConcurrencyHelpers
import PostgresNIO

extension PostgresSyncStore {
    /// Listens on ``PostgresSchema/channel`` on a connection of its own, and
    /// publishes each push's scopes to this instance's live subscribers once
    /// the push is below the pull horizon (a pull would not return it
    /// before). Reconnects with backoff; after a reconnect every subscriber
    /// is told to pull, since news may have been missed meanwhile.
    func listen() async throws {
        var delay = Duration.milliseconds(100)
        var connectedBefore = false
        var connectionID = 0
        while !Task.isCancelled {
            do {
                connectionID += 1
                let connection = try await PostgresConnection.connect(
                    configuration: try Self.connectionConfiguration(configuration),
                    id: connectionID,
                    logger: logger
                )
                do {
                    try await connection.listen(on: PostgresSchema.channel) { notifications in
                        delay = .milliseconds(100)
                        if connectedBefore {
                            changeFeed.publishToAll()
                        }
                        connectedBefore = true
                        var readableBelow: Int64 = 0
                        for try await notification in notifications {
                            guard let notice = try? ChangeNotice(payload: notification.payload) else {
                                logger.warning("ignored a malformed change notice", metadata: ["payload": "\(notification.payload)"])
                                continue
                            }
                            readableBelow = await waitUntilReadable(notice.xid, knownHorizon: readableBelow)
                            changeFeed.publish(Set(notice.scopes))
                        }
                    }
                } catch {
                    try? await connection.close()
                    throw error
                }
                try? await connection.close()
            } catch {
                if Task.isCancelled { return }
                logger.warning("change listener lost PostgreSQL; reconnecting", metadata: ["error": "\(Self.describe(error))"])
                try await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(2))
            }
        }
    }

    /// Waits (up to two seconds) until every transaction at or before `xid`
    /// has ended, so a pull reads the notified change. Returns the pull
    /// horizon seen, which only grows.
    private func waitUntilReadable(_ xid: Int64, knownHorizon: Int64) async -> Int64 {
        var horizon = knownHorizon
        let deadline = ContinuousClock.now + .seconds(2)
        while horizon <= xid, ContinuousClock.now < deadline {
            do {
                let rows = try await client.query("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint", logger: logger)
                for try await xmin in rows.decode(Int64.self) {
                    horizon = max(horizon, xmin)
                }
                if horizon <= xid {
                    try await Task.sleep(for: .milliseconds(5))
                }
            } catch {
                break
            }
        }
        return horizon
    }

    static func connectionConfiguration(_ configuration: PostgresStoreConfiguration) throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS = switch configuration.tls {
        case .disable: .disable
        case .prefer: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case .require: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        return PostgresConnection.Configuration(
            host: configuration.host,
            port: configuration.port,
            username: configuration.username,
            password: configuration.password,
            database: configuration.database,
            tls: tls
        )
    }
}
