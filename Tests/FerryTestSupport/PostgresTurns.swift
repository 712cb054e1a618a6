import Synchronization
import Testing

/// One test at a time on the shared PostgreSQL cluster, while the rest of
/// the suite runs side by side.
///
/// The PostgreSQL store reads below the cluster's oldest running
/// transaction (`pg_snapshot_xmin`), and that horizon is the cluster's,
/// not one database's: a neighbour's open transaction in another database
/// holds back what a pull or a garbage collection sees here. Not a loss (the
/// next pull has it), but a test that syncs and then compares would see
/// the delay. So a test case takes the cluster's turn when it creates its
/// first database (``PostgresTestDatabase/create()``) and gives it back when
/// it ends; tests that never touch PostgreSQL never wait.
///
/// ```swift
/// @Suite(.postgresTurns) struct ScopeTests { … }
/// ```
public struct PostgresTurns: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard testCase != nil else { return try await function() }
        let turn = Turn()
        do {
            try await Turn.$current.withValue(turn) { try await function() }
        } catch {
            await turn.end()
            throw error
        }
        await turn.end()
    }

    /// A test case's claim on the cluster: taken at its first database,
    /// held until the test case ends.
    public final class Turn: Sendable {
        @TaskLocal public static var current: Turn?
        /// The wait for the cluster, once asked for; and whether the test case ended.
        private let state = Mutex<(acquisition: Task<Void, Never>?, ended: Bool)>((nil, false))
        /// Work to finish before the turn passes on (dropping databases: a
        /// `DROP DATABASE` is a transaction too).
        private let cleanups = Mutex<[@Sendable () async -> Void]>([])

        /// Runs `cleanup` when the test case ends, before the cluster goes
        /// to the next one: for a `defer`, which cannot wait.
        func atEnd(_ cleanup: @escaping @Sendable () async -> Void) {
            let ended = state.withLock { $0.ended }
            // Asked for after the test case ended: done now, never dropped.
            if ended { Task { await cleanup() } } else { cleanups.withLock { $0.append(cleanup) } }
        }

        /// Waits for the cluster, once per test case: every caller (several
        /// databases, made at once or one after another) waits for the same turn.
        func take() async throws {
            let acquisition = try state.withLock { state -> Task<Void, Never> in
                guard !state.ended else { throw Ended() }
                if let acquisition = state.acquisition { return acquisition }
                let acquisition = Task { await Self.cluster.acquire() }
                state.acquisition = acquisition
                return acquisition
            }
            await acquisition.value
        }

        /// Gives the turn back, once it was had: a wait still queued is
        /// waited out first, so a turn is never handed back that this test
        /// case did not get.
        func end() async {
            let acquisition = state.withLock { state in
                defer { state = (nil, true) }
                return state.acquisition
            }
            guard let acquisition else { return }
            await acquisition.value
            for cleanup in cleanups.withLock({ list in
                defer { list = [] }; return list
            }) { await cleanup() }
            await Self.cluster.release()
        }

        static let cluster = AsyncSemaphore()

        struct Ended: Error, CustomStringConvertible {
            var description: String { "a PostgreSQL database was asked for after its test case ended" }
        }
    }
}

extension Trait where Self == PostgresTurns {
    /// Each test case of the suite takes the PostgreSQL cluster's turn
    /// before it creates a database (see ``PostgresTurns``).
    public static var postgresTurns: Self { PostgresTurns() }
}

/// A lock that waits without blocking a thread, first come first served.
actor AsyncSemaphore {
    private var held = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        if !held {
            held = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty {
            held = false
        } else {
            waiting.removeFirst().resume()
        }
    }
}
