/// Size limits the server holds on every request, and states in the
/// OpenAPI document it serves: a request past one gets 400 or 413.
///
/// ```swift
/// var limits = ServerLimits()
/// limits.maxBodyBytes = 1 << 20
/// ```
public struct ServerLimits: Sendable, Hashable {
    /// The largest request body, in bytes; larger ones get 413.
    public var maxBodyBytes = 4 << 20
    /// The largest attachment (blob) upload, in bytes; larger ones get 413,
    /// from `Upload-Length` or `Content-Length` before any byte is read.
    public var maxBlobBytes: Int64 = 1 << 30
    public var maxMutationsPerPush = 1000
    public var maxColumnsPerMutation = 256
    /// The most scopes one pull or live subscription may name.
    public var maxScopesPerRequest = 64
    /// The page size when a pull names none.
    public var defaultPullLimit = 500
    /// The largest page size a pull may ask for.
    public var maxPullLimit = 5000

    public init() {}
}
