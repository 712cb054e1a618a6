import NIOConcurrencyHelpers

/// Wakes one waiting loop early: a ring while nobody waits is kept for the
/// next wait, and closing it ends every wait for good.
///
/// ```swift
/// let bell = Doorbell()
/// Task { bell.ring() }
/// let open = await bell.wait(upTo: .seconds(5))   // true: rung (or timed out); false: closed
/// ```
final class Doorbell: Sendable {
    private struct State {
        var pending = false
        var closed = false
        var waiter: AsyncStream<Void>.Continuation?
    }

    private let state = NIOLockedValueBox(State())

    func ring() {
        let waiter = state.withLockedValue { state -> AsyncStream<Void>.Continuation? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.finish()
    }

    func close() {
        let waiter = state.withLockedValue { state in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.finish()
    }

    /// Waits until rung, closed or `duration` passed.
    /// - Returns: `false` once closed.
    func wait(upTo duration: Duration) async -> Bool {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        let ready = state.withLockedValue { state -> Bool in
            if state.closed || state.pending {
                state.pending = false
                return true
            }
            state.waiter = continuation
            return false
        }
        if !ready {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for await _ in stream {} }
                group.addTask { try? await Task.sleep(for: duration) }
                await group.next()
                group.cancelAll()
            }
            state.withLockedValue { if $0.waiter != nil { $0.waiter = nil } }
        }
        return !state.withLockedValue(\.closed)
    }
}
