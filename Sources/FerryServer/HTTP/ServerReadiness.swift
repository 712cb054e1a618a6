import Synchronization

/// Whether the server should get new traffic: what `GET /readyz` answers.
///
/// Draining starts when the process is told to stop: `/readyz` answers 503
/// from then on while requests are still served, so a load balancer moves
/// traffic away before the server exits (`ferry-server serve
/// --drain-seconds`). The store is asked at most once at a time, and its
/// answer is kept for a second, so probes (which need no token) never pile
/// queries onto a store that hangs.
///
/// ```swift
/// let readiness = ServerReadiness()
/// let app = try await FerryApplication.build(configuration: configuration, store: store, readiness: readiness)
/// // on SIGTERM:
/// readiness.drain()   // /readyz → 503; then shut down after the drain period
/// ```
public final class ServerReadiness: Sendable {
    /// How long the store's last answer stands.
    static let answerLifetime = Duration.seconds(1)

    private struct State {
        var draining = false
        var answer: (ready: Bool, at: ContinuousClock.Instant)?
        var asking: Task<Bool, Never>?
    }

    private let state = Mutex(State())

    public init() {}

    /// From now on `/readyz` answers 503 (`draining`).
    public func drain() {
        state.withLock { $0.draining = true }
    }

    public var isDraining: Bool { state.withLock { $0.draining } }

    /// Whether the store answers, within `timeout`: the answer of the last
    /// second, or of the question already asked, or of a new one.
    func storeAnswers(within timeout: Duration, asking question: @escaping @Sendable () async -> Bool) async -> Bool {
        let now = ContinuousClock.now
        let task: Task<Bool, Never> = state.withLock { state in
            if let answer = state.answer, answer.at.duration(to: now) < Self.answerLifetime {
                return Task { answer.ready }
            }
            if let asking = state.asking { return asking }
            let asking = Task { [self] in
                let ready = await question()
                self.state.withLock {
                    $0.answer = (ready, .now); $0.asking = nil
                }
                return ready
            }
            state.asking = asking
            return asking
        }
        // Raced in unstructured tasks: a store that hangs cannot hold the probe.
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let first = FirstAnswer(continuation)
            Task { first.answer(await task.value) }
            Task {
                try? await Task.sleep(for: timeout)
                first.answer(false)
            }
        }
    }
}

/// Resumes a continuation with the first answer given; later ones are dropped.
private final class FirstAnswer: Sendable {
    private let pending: Mutex<CheckedContinuation<Bool, Never>?>

    init(_ continuation: CheckedContinuation<Bool, Never>) {
        pending = Mutex(continuation)
    }

    func answer(_ value: Bool) {
        pending.withLock { $0.take() }?.resume(returning: value)
    }
}
