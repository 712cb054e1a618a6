import Crypto
import Foundation
import NIOConcurrencyHelpers

/// Who is signed in to the console: a random session id per sign-in (the
/// HttpOnly cookie), each with its own CSRF token that every form carries.
/// A session ends after ``idleTimeout`` without a request, after
/// ``maxLifetime`` in all, or at sign-out. Kept in memory: a restart signs
/// everyone out, and each instance has its own.
///
/// ```swift
/// var table = ConsoleSessionTable(idleTimeout: 1_800_000)
/// let session = table.open(now: now)
/// table.touch(session.id, now: now + 1000)   // the session, still open
/// ```
struct ConsoleSessionTable: Sendable {
    struct Session: Sendable, Hashable {
        var id: String
        var csrf: String
        var openedAt: Int64
        var lastSeen: Int64
    }

    /// Milliseconds without a request after which a session ends.
    var idleTimeout: Int64
    /// Milliseconds after sign-in after which a session ends, however busy.
    var maxLifetime: Int64 = 12 * 3_600_000
    /// The most sessions kept; the least recently used goes first.
    var capacity = 1024
    private var sessions: [String: Session] = [:]

    init(idleTimeout: Int64) {
        self.idleTimeout = idleTimeout
    }

    mutating func open(now: Int64) -> Session {
        removeExpired(now: now)
        if sessions.count >= capacity, let oldest = sessions.values.min(by: { $0.lastSeen < $1.lastSeen }) {
            sessions[oldest.id] = nil
        }
        let session = Session(id: Self.randomToken(), csrf: Self.randomToken(), openedAt: now, lastSeen: now)
        sessions[session.id] = session
        return session
    }

    /// The open session with this id, its idle time restarted; `nil` when
    /// unknown or expired (an expired one is forgotten).
    mutating func touch(_ id: String, now: Int64) -> Session? {
        guard var session = sessions[id] else { return nil }
        guard now - session.lastSeen < idleTimeout, now - session.openedAt < maxLifetime else {
            sessions[id] = nil
            return nil
        }
        session.lastSeen = now
        sessions[id] = session
        return session
    }

    /// Whether the session is still open, without restarting its idle
    /// time: an open page's live panel does not keep a session alive.
    func isOpen(_ id: String, now: Int64) -> Bool {
        guard let session = sessions[id] else { return false }
        return now - session.lastSeen < idleTimeout && now - session.openedAt < maxLifetime
    }

    mutating func close(_ id: String) {
        sessions[id] = nil
    }

    private mutating func removeExpired(now: Int64) {
        sessions = sessions.filter { now - $0.value.lastSeen < idleTimeout && now - $0.value.openedAt < maxLifetime }
    }

    /// 256 random bits, URL-safe.
    static func randomToken() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Base64URL.encode($0) }
    }
}

/// The session table and the sign-in throttle behind locks, shared by the
/// console's handlers.
final class ConsoleSessions: Sendable {
    private let table: NIOLockedValueBox<ConsoleSessionTable>
    private let throttle = NIOLockedValueBox(ConsoleSignInThrottle())
    private let now: @Sendable () -> Int64

    init(idleTimeout: Duration, now: @escaping @Sendable () -> Int64) {
        table = NIOLockedValueBox(ConsoleSessionTable(idleTimeout: max(1, idleTimeout.wholeMilliseconds)))
        self.now = now
    }

    func open() -> ConsoleSessionTable.Session {
        let now = now()
        return table.withLockedValue { $0.open(now: now) }
    }

    func session(_ id: String) -> ConsoleSessionTable.Session? {
        let now = now()
        return table.withLockedValue { $0.touch(id, now: now) }
    }

    func isOpen(_ id: String) -> Bool {
        let now = now()
        return table.withLockedValue { $0.isOpen(id, now: now) }
    }

    func close(_ id: String) {
        table.withLockedValue { $0.close(id) }
    }

    /// Milliseconds until `address` may try a token again; 0 when it may now.
    func signInWait(for address: String) -> Int64 {
        let now = now()
        return throttle.withLockedValue { $0.wait(for: address, now: now) }
    }

    func signInFailed(from address: String) {
        let now = now()
        throttle.withLockedValue { $0.failed(address, now: now) }
    }

    func signInSucceeded(from address: String) {
        throttle.withLockedValue { $0.succeeded(address) }
    }
}
