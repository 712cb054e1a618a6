/// What one connection, and all of them together, may hold of the server:
/// how long it may take to send a request, how long it may sit idle, how
/// many may be open, and how many live streams one user may keep.
///
/// ```swift
/// var configuration = FerryServerConfiguration(jwtSecret: secret)
/// configuration.connections.headerReadTimeout = .seconds(5)
/// configuration.connections.maxLiveStreamsPerUser = 4
/// ```
///
/// `ferry-server` takes each as a flag (`--header-timeout`, `--body-timeout`,
/// `--idle-timeout`, `--max-connections`, `--max-live-streams`).
public struct ConnectionLimits: Sendable, Hashable {
    /// From a request's first byte to the end of its head; a connection
    /// still sending headers after it is closed. Default 10 s.
    public var headerReadTimeout: Duration = .seconds(10)
    /// From the end of a request's head to the end of its body; a
    /// connection still sending the body after it is closed. Default 30 s.
    public var bodyReadTimeout: Duration = .seconds(30)
    /// How long a kept-alive connection may wait for its next request
    /// before it is closed. Default 60 s.
    public var idleTimeout: Duration = .seconds(60)
    /// Connections open at once. One more is answered 503 and closed at
    /// once. Default 4,096; at start the server lowers it to fit its
    /// open-file limit, keeping descriptors for its store and its logs.
    public var maxConnections = 4096
    /// Live streams (`GET /v1/live`) one user may hold open at once; one
    /// more is answered 429 and its connection closed. Default 16.
    public var maxLiveStreamsPerUser = 16

    public init() {}

    /// The connection cap that fits `descriptorLimit` open files: a quarter
    /// of them (at least 32, at most 256) stay for the store, logs and
    /// the listening socket.
    public func effectiveMaxConnections(descriptorLimit: Int) -> Int {
        let reserve = max(32, min(256, descriptorLimit / 4))
        return max(1, min(maxConnections, descriptorLimit - reserve))
    }
}
