import Foundation
import NIOConcurrencyHelpers

/// Tokens already verified, with their user and expiry, so a client's
/// every request does not pay for an HMAC check and a JSON parse: a hit
/// still honours the expiry to the second. Bounded: past `capacity`,
/// expired entries go first, then arbitrary ones.
final class VerifiedTokens: Sendable {
    private let entries = NIOLockedValueBox([String: VerifiedToken]())
    let capacity: Int

    init(capacity: Int = 10_000) {
        self.capacity = capacity
    }

    /// The user of a verified token that has not expired by `now`.
    func user(of token: String, now: Date) -> String? {
        entry(of: token, now: now)?.userID
    }

    /// What a verified token that has not expired by `now` says.
    func entry(of token: String, now: Date) -> VerifiedToken? {
        entries.withLockedValue { entries in
            guard let entry = entries[token] else { return nil }
            guard entry.expires > now else {
                entries[token] = nil
                return nil
            }
            return entry
        }
    }

    func remember(_ token: String, _ verified: VerifiedToken, now: Date) {
        entries.withLockedValue { entries in
            if entries.count >= capacity {
                entries = entries.filter { $0.value.expires > now }
                while entries.count >= capacity, let any = entries.keys.first { entries[any] = nil }
            }
            entries[token] = verified
        }
    }

    var count: Int { entries.withLockedValue { $0.count } }
}
