import Foundation
import Logging

/// Timing of a ``FerryDatabase``'s transactions, and how often it waited on
/// another process's lock.
///
/// Transactions run through `FerryDatabase.write(_:)` and
/// `FerryDatabase.read(_:)` (blocking or async) are timed from the moment they hold
/// their connection until commit. The most recent 4,096 of each kind are kept.
///
/// ```swift
/// let snapshot = database.telemetry.snapshot()
/// print("writes:", snapshot.writes, "busy waits:", snapshot.busyWaits)
/// ```
public final class DatabaseTelemetry: Sendable {
    /// The numbers at one moment.
    public struct Snapshot: Sendable, Hashable {
        /// Write transactions: begin to commit.
        public var writes: DurationSummary
        /// Read transactions.
        public var reads: DurationSummary
        /// How many times a write had to wait for another process's lock.
        public var busyWaits: Int
        /// How many of those waits ran out of time and returned `SQLITE_BUSY`.
        public var busyTimeouts: Int
        /// Write transactions that stayed open longer than the warning threshold.
        public var longWriteTransactions: Int
    }

    private struct Window {
        static let capacity = 4096
        var values: [Duration] = []
        var next = 0

        mutating func append(_ value: Duration) {
            if values.count < Self.capacity {
                values.append(value)
            } else {
                values[next] = value
                next = (next + 1) % Self.capacity
            }
        }
    }

    private struct State {
        var writes = Window()
        var reads = Window()
        var busyWaits = 0
        var busyTimeouts = 0
        var longWrites = 0
    }

    private let state = Locked(State())
    private let logger: Logger
    /// Write transactions open longer than this are logged as warnings.
    public let longTransactionThreshold: Duration

    init(logger: Logger, longTransactionThreshold: Duration) {
        self.logger = logger
        self.longTransactionThreshold = longTransactionThreshold
    }

    public func snapshot() -> Snapshot {
        state.withLock { state in
            Snapshot(
                writes: DurationSummary(state.writes.values),
                reads: DurationSummary(state.reads.values),
                busyWaits: state.busyWaits,
                busyTimeouts: state.busyTimeouts,
                longWriteTransactions: state.longWrites)
        }
    }

    func recordWrite(_ duration: Duration, connection: String) {
        let isLong = duration > longTransactionThreshold
        state.withLock { state in
            state.writes.append(duration)
            if isLong { state.longWrites += 1 }
        }
        if isLong {
            logger.warning(
                "write transaction stayed open longer than the threshold",
                metadata: [
                    "connection": "\(connection)",
                    "duration": "\(duration)",
                    "threshold": "\(longTransactionThreshold)",
                ])
        }
    }

    func recordRead(_ duration: Duration) {
        state.withLock { $0.reads.append(duration) }
    }

    func recordBusyWait(timedOut: Bool) {
        state.withLock { state in
            if timedOut { state.busyTimeouts += 1 } else { state.busyWaits += 1 }
        }
    }
}
