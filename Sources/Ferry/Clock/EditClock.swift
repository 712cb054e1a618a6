import FerryProtocol

/// The hybrid logical clock that stamps local edits, shared by the capture
/// triggers (through the `ferry_hlc()` SQL function) and the sync engine.
///
/// It is persisted implicitly: every stamp it issues lands in `ferry_outbox`,
/// and the outbox purge saves the highest stamp to `ferry_meta` before it
/// deletes entries. On open, the clock resumes after the highest stamp found
/// in either place, so stamps stay monotonic across restarts even when the
/// wall clock went backwards while the app was closed.
final class EditClock: Sendable {
    private let wallClock: any WallClock
    private let state: Locked<HybridLogicalClock>

    init(wallClock: any WallClock, resumingAfter latest: HLCTimestamp) {
        self.wallClock = wallClock
        self.state = Locked(HybridLogicalClock(latest: latest))
    }

    /// Issues the stamp of a local edit.
    func tick() -> HLCTimestamp {
        let now = wallClock.nowMilliseconds()
        return state.withLock { $0.tick(physicalMilliseconds: now) }
    }

    /// Merges a stamp seen from the server so later local edits order after it.
    func receive(_ remote: HLCTimestamp) -> HLCTimestamp {
        let now = wallClock.nowMilliseconds()
        return state.withLock { $0.receive(remote, physicalMilliseconds: now) }
    }

    /// The latest stamp issued or received.
    var latest: HLCTimestamp {
        state.withLock { $0.latest }
    }

    /// How far ahead of this device's wall clock a pulled stamp may be and
    /// still be followed: as far as the server lets a last-write-wins stamp
    /// lead its own time. A stamp from a device whose clock runs years
    /// ahead (possible on tables whose policy ignores stamps) is not.
    static let maxPulledLeadMilliseconds: Int64 = 60_000

    /// Whether a pulled stamp is close enough to this device's wall clock
    /// to follow (no more than ``maxPulledLeadMilliseconds`` ahead).
    func follows(pulled stamp: HLCTimestamp) -> Bool {
        stamp.wallMilliseconds <= wallClock.nowMilliseconds() + Self.maxPulledLeadMilliseconds
    }

    /// Moves the clock past a stamp found on disk (another process's edits).
    func advance(past stamp: HLCTimestamp) {
        state.withLock { clock in
            if stamp > clock.latest { clock = HybridLogicalClock(latest: stamp) }
        }
    }
}
