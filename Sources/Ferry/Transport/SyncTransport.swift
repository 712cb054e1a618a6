import FerryProtocol
import Foundation

/// How the sync engine reaches the server: one call per protocol request.
///
/// ``URLSessionSyncTransport`` ships in `Ferry`; `HTTPSyncTransport`, over
/// AsyncHTTPClient, in the `FerryHTTPClient` product. Wrap a transport to add behaviour
/// (`FaultInjectingTransport`, in the `FerryTesting` product, drops, delays, duplicates and reorders
/// requests for tests), or implement one for another channel.
///
/// ```swift
/// let transport = URLSessionSyncTransport(baseURL: URL(string: "https://sync.example.com")!)
/// let reply = try await transport.push(PushRequest(clientID: id, mutations: []), token: token)
/// print(reply.lastAppliedMutationID)
/// ```
///
/// Failures are thrown as ``SyncTransportError`` so the engine can tell a
/// network failure (retried) from a refusal (not retried).
public protocol SyncTransport: Sendable {
    /// `POST /v1/push`.
    func push(_ request: PushRequest, token: String?) async throws -> PushResponse
    /// Readies `request` to go out later through ``push(_:token:)-(PreparedPush,_)``:
    /// a transport that encodes its body does it here, so a drain encodes
    /// batch N+1 while batch N is on the wire. The default encodes nothing.
    func preparePush(_ request: PushRequest) -> PreparedPush
    /// `POST /v1/push` of a prepared request, with the body it was prepared
    /// with. The default sends ``PreparedPush/request`` through
    /// ``push(_:token:)-(PushRequest,_)``.
    func push(_ prepared: PreparedPush, token: String?) async throws -> PushResponse
    /// `POST /v1/pull`.
    func pull(_ request: PullRequest, token: String?) async throws -> PullResponse
    /// `GET /v1/rows/{scope}/{table}/{rowID}`: one row as the server holds
    /// it, or `nil` when it has none (404).
    func row(scope: String, table: String, rowID: String, token: String?) async throws -> ServerRow?
    /// `GET /v1/live`: the server's news for `scopes`, until the stream ends
    /// or fails. The first message is ``LiveMessage/ready`` once subscribed.
    func live(scopes: [String], token: String?) -> AsyncThrowingStream<LiveMessage, any Error>

    /// `HEAD /v1/blobs/{scope}/{sha256}`: how many bytes of the blob the
    /// server holds (its size once complete), or `nil` when it holds none.
    func blobOffset(scope: String, sha256: String, token: String?) async throws -> Int64?
    /// `PUT /v1/blobs/{scope}/{sha256}`: sends the bytes `reader` yields
    /// (from its ``BlobReader/offset``, as they are read, never whole) of a
    /// blob of `size` bytes, and returns how many bytes the server holds
    /// after. `progress` is told, as the body goes out, how many of the
    /// blob's bytes are sent (counting from the start of the blob).
    func uploadBlob(
        scope: String, sha256: String, from reader: BlobReader, size: Int64, token: String?,
        progress: @escaping BlobProgress
    ) async throws -> Int64
    /// `GET /v1/blobs/{scope}/{sha256}`, with a `Range` from the bytes
    /// `writer` already ``BlobWriter/held`` (in one request or several): writes the blob's
    /// bytes to `writer` as they arrive, then ``BlobWriter/flush()``es it,
    /// telling `progress` how many of the blob's bytes it holds.
    func downloadBlob(
        scope: String, sha256: String, into writer: BlobWriter, token: String?,
        progress: @escaping BlobProgress) async throws
}

/// Told how many bytes of a blob a transfer has moved so far, counted from
/// the start of the blob. Called often (per buffer): keep it cheap.
public typealias BlobProgress = @Sendable (Int64) -> Void

extension SyncTransport {
    public func preparePush(_ request: PushRequest) -> PreparedPush {
        PreparedPush(request)
    }

    public func push(_ prepared: PreparedPush, token: String?) async throws -> PushResponse {
        try await push(prepared.request, token: token)
    }

    /// Uploads the plain file at `file` from `offset`: ``uploadBlob(scope:sha256:from:size:token:progress:)``
    /// with a ``BlobReader`` of it.
    public func uploadBlob(
        scope: String, sha256: String, file: URL, offset: Int64 = 0, size: Int64, token: String?,
        progress: @escaping BlobProgress = { _ in }
    ) async throws -> Int64 {
        let reader = try BlobReader(file: file, from: offset)
        defer { reader.close() }
        return try await uploadBlob(scope: scope, sha256: sha256, from: reader, size: size, token: token, progress: progress)
    }

    /// Downloads into the plain file at `file`, continuing from the bytes it
    /// holds: ``downloadBlob(scope:sha256:into:token:progress:)`` with a
    /// ``BlobWriter`` appending to it.
    public func downloadBlob(
        scope: String, sha256: String, into file: URL, token: String?,
        progress: @escaping BlobProgress = { _ in }
    ) async throws {
        let writer = try BlobWriter(appendingTo: file)
        defer { writer.close() }
        try await downloadBlob(scope: scope, sha256: sha256, into: writer, token: token, progress: progress)
    }
}

extension SyncTransport {
    public func blobOffset(scope: String, sha256: String, token: String?) async throws -> Int64? {
        throw SyncTransportError.invalidResponse("\(Self.self) does not move attachment bytes")
    }

    public func uploadBlob(
        scope: String, sha256: String, from reader: BlobReader, size: Int64, token: String?,
        progress: @escaping BlobProgress
    ) async throws -> Int64 {
        throw SyncTransportError.invalidResponse("\(Self.self) does not move attachment bytes")
    }

    public func downloadBlob(
        scope: String, sha256: String, into writer: BlobWriter, token: String?,
        progress: @escaping BlobProgress
    ) async throws {
        throw SyncTransportError.invalidResponse("\(Self.self) does not move attachment bytes")
    }
}

/// A message on the live stream.
public enum LiveMessage: Sendable, Hashable {
    /// Subscribed: every change committed from now on will be announced.
    case ready
    /// These scopes have news: pull them.
    case change(scopes: [String])
    /// The rows of a small change themselves: apply them (they move no
    /// cursor; the next pull stays the source of truth).
    case page(PullPage)
    /// The token that opened the stream expired; the stream ends. Open it
    /// again with a fresh token.
    case expired
    /// The user can no longer read `scope`, which the stream follows; the
    /// stream ends. A sync says which scope is refused.
    case revoked(scope: String)
}

extension LiveMessage {
    /// The message one server-sent event of `GET /v1/live` carries, or
    /// `nil` for an event this client does not know; every transport reads
    /// the stream through this.
    ///
    /// ```swift
    /// for event in parser.feed(bytes) {
    ///     if let message = LiveMessage(event, following: scopes) { continuation.yield(message) }
    /// }
    /// ```
    package init?(_ event: EventStreamParser.Event, following scopes: [String]) {
        switch event.name {
        case LiveEvent.Name.ready.rawValue:
            self = .ready
        case LiveEvent.Name.change.rawValue:
            let news = try? JSONDecoder().decode(LiveEvent.self, from: Data(event.data.utf8))
            self = .change(scopes: news?.scopes ?? scopes)
        case LiveEvent.Name.page.rawValue:
            // Unreadable rows are news all the same: pull.
            self =
                (try? PullResponseReader.decode(PullPage.self, from: Data(event.data.utf8))).map(LiveMessage.page)
                ?? .change(scopes: scopes)
        case LiveEvent.Name.expired.rawValue:
            self = .expired
        case LiveEvent.Name.revoked.rawValue:
            let news = try? JSONDecoder().decode(LiveEvent.self, from: Data(event.data.utf8))
            self = .revoked(scope: news?.scopes.first ?? "")
        default:
            return nil
        }
    }
}

/// Why a request did not produce a reply.
public enum SyncTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No connection, or it was refused, reset or closed early.
    case unreachable(String)
    /// No answer in time.
    case timedOut
    /// The server answered with an error status.
    case http(status: Int, error: ErrorResponse?, retryAfter: Duration?)
    /// The server answered something that is not the protocol.
    case invalidResponse(String)

    public var description: String {
        switch self {
        case .unreachable(let reason): "server unreachable: \(reason)"
        case .timedOut: "the server did not answer in time"
        case .http(let status, let error, _):
            "HTTP \(status)" + (error.map { " \($0.code.rawValue): \($0.message)" } ?? "")
        case .invalidResponse(let reason): "invalid response: \(reason)"
        }
    }
}
