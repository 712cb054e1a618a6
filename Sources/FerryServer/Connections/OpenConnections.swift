import NIOConcurrencyHelpers

/// How many connections are open, against the cap.
final class OpenConnections: Sendable {
    private let count = NIOLockedValueBox(0)
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts a new connection; `false` when it is over the cap (it is
    /// counted all the same until it closes).
    func open() -> Bool {
        count.withLockedValue { count in
            count += 1
            return count <= limit
        }
    }

    func close() {
        count.withLockedValue { $0 -= 1 }
    }

    var current: Int { count.withLockedValue { $0 } }
}
