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
        private let state = Mutex<(held: Bool, ended: Bool)>((false, false))

        /// Waits for the cluster, once per test case.
        func take() async {
            let first = state.withLock { state in
                guard !state.held, !state.ended else { return false }
                state.held = true
                return true
            }
            if first { await Self.cluster.acquire() }
        }

        func end() async {
            let held = state.withLock { state in
                defer { state = (false, true) }
                return state.held
            }
            if held { await Self.cluster.release() }
        }

        static let cluster = AsyncSemaphore()
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
