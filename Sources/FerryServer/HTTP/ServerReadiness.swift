import Synchronization

/// Whether the server should get new traffic: what `GET /readyz` answers
/// besides asking the store. Draining starts when the process is told to
/// stop: `/readyz` answers 503 from then on while requests are still
/// served, so a load balancer moves traffic away before the server exits
/// (`ferry-server serve --drain-seconds`).
///
/// ```swift
/// let readiness = ServerReadiness()
/// let app = try await FerryApplication.build(configuration: configuration, store: store, readiness: readiness)
/// // on SIGTERM:
/// readiness.drain()   // /readyz → 503; then shut down after the drain period
/// ```
public final class ServerReadiness: Sendable {
    private let draining = Atomic<Bool>(false)

    public init() {}

    /// From now on `/readyz` answers 503 (`draining`).
    public func drain() {
        draining.store(true, ordering: .relaxed)
    }

    public var isDraining: Bool { draining.load(ordering: .relaxed) }
}
