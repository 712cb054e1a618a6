import FerryServer
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
        let pending = PendingNotices()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.publishWhenReadable(pending) }
            group.addTask { try await self.receiveNotices(into: pending) }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    private func receiveNotices(into pending: PendingNotices) async throws {
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
                        for try await notification in notifications {
                            guard let notice = try? ChangeNotice(payload: notification.payload) else {
                                logger.warning("ignored a malformed change notice", metadata: ["payload": "\(notification.payload)"])
                                continue
                            }
                            pending.add(notice)
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

    /// Publishes waiting notices once every transaction at or before theirs
    /// has ended, so a pull reads the notified change; checks the horizon
    /// every few milliseconds while any wait, with no deadline.
    private func publishWhenReadable(_ pending: PendingNotices) async throws {
        var horizon: Int64 = 0
        for await _ in pending.arrivals {
            while let newest = pending.newestXID {
                if newest >= horizon, let xmin = try? await currentHorizon() {
                    horizon = max(horizon, xmin)
                }
                for notice in pending.take(below: horizon) {
                    changeFeed.publish(Set(notice.scopes))
                }
                if pending.newestXID != nil {
                    try await Task.sleep(for: .milliseconds(5))
                }
            }
        }
    }

    private func currentHorizon() async throws -> Int64? {
        let rows = try await client.query("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint", logger: logger)
        var horizon: Int64?
        for try await xmin in rows.decode(Int64.self) {
            horizon = xmin
        }
        return horizon
    }

    static func connectionConfiguration(_ configuration: PostgresStoreConfiguration) throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS =
            switch configuration.tls {
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

/// Change notices received and not yet readable by a pull.
final class PendingNotices: Sendable {
    private let notices = NIOLockedValueBox<[ChangeNotice]>([])
    private let continuation: AsyncStream<Void>.Continuation
    /// Ticks when notices arrive.
    let arrivals: AsyncStream<Void>

    init() {
        (arrivals, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func add(_ notice: ChangeNotice) {
        notices.withLockedValue { $0.append(notice) }
        continuation.yield()
    }

    var newestXID: Int64? {
        notices.withLockedValue { $0.map(\.xid).max() }
    }

    /// Removes and returns the notices of transactions below `horizon`, in arrival order.
    func take(below horizon: Int64) -> [ChangeNotice] {
        notices.withLockedValue { notices in
            let ready = notices.filter { $0.xid < horizon }
            notices.removeAll { $0.xid < horizon }
            return ready
        }
    }
}
