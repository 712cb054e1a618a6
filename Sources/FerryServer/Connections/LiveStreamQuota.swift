import NIOConcurrencyHelpers

/// How many live streams each user holds, against the per-user cap.
///
/// A stream holds a ``Ticket`` for as long as it runs; the ticket gives its
/// place back when it is released, however the stream ends (the client
/// went away, the server stops, the response was never started).
final class LiveStreamQuota: Sendable {
    private let held = NIOLockedValueBox([String: Int]())
    let perUser: Int

    init(perUser: Int) {
        self.perUser = perUser
    }

    /// A place for one more stream of `userID`, or `nil` at the cap.
    func take(for userID: String) -> Ticket? {
        let granted = held.withLockedValue { held in
            guard held[userID, default: 0] < perUser else { return false }
            held[userID, default: 0] += 1
            return true
        }
        return granted ? Ticket(quota: self, userID: userID) : nil
    }

    func count(for userID: String) -> Int {
        held.withLockedValue { $0[userID] ?? 0 }
    }

    fileprivate func release(_ userID: String) {
        held.withLockedValue { held in
            held[userID, default: 1] -= 1
            if held[userID] == 0 { held[userID] = nil }
        }
    }

    final class Ticket: Sendable {
        private let quota: LiveStreamQuota
        private let userID: String
        private let held = NIOLockedValueBox(true)

        fileprivate init(quota: LiveStreamQuota, userID: String) {
            self.quota = quota
            self.userID = userID
        }

        /// Gives the place back; later calls (and the deinit) do nothing.
        func release() {
            let wasHeld = held.withLockedValue { held in
                defer { held = false }
                return held
            }
            if wasHeld { quota.release(userID) }
        }

        deinit {
            release()
        }
    }
}
