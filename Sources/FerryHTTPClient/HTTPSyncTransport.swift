import AsyncHTTPClient
import Ferry
import FerryProtocol
import Foundation
import NIOCore
import NIOHTTP1

/// The `/v1` HTTP API over AsyncHTTPClient, for Linux and server-side
/// Swift: the `FerryHTTPClient` product, apart from `Ferry` so an app that
/// only needs the local database does not link SwiftNIO. (On Apple
/// platforms `URLSessionSyncTransport`, in `Ferry` itself, does the same.)
///
/// AsyncHTTPClient streams response bodies, which the live endpoint
/// (server-sent events) needs. Transports share one client, ``defaultClient``,
/// unless given another.
///
/// ```swift
/// import FerryHTTPClient
///
/// let transport = HTTPSyncTransport(baseURL: URL(string: "http://127.0.0.1:8080")!)
/// let engine = SyncEngine(database: database, transport: transport,
///                         configuration: SyncConfiguration(userID: "alice"),
///                         token: token)
/// ```
public struct HTTPSyncTransport: SyncTransport {
    /// The server's address, without `/v1`.
    public let baseURL: URL
    /// How long a push or pull may take, reply included.
    public var requestTimeout: Duration
    /// The largest reply accepted (a pull page is cut at 8 MiB by the server).
    public var maxResponseBytes: Int
    private let client: HTTPClient
    private let compression: BodyCompression

    /// A transport talking to the server at `baseURL`.
    ///
    /// - Parameters:
    ///   - baseURL: the server's address, without `/v1`.
    ///   - requestTimeout: how long a push or pull may take, reply included.
    ///   - maxResponseBytes: the largest reply accepted, after decompression.
    ///   - client: the AsyncHTTPClient to send through; ``defaultClient``
    ///     unless the app shares its own.
    ///   - compression: ask for compressed answers (gzip or deflate), and
    ///     gzip pushes of 1 KiB or more once the server has shown it decodes
    ///     them; `false` sends and takes every byte as it is. With
    ///     compression on, give a `client` whose own decompression is off
    ///     (the default client's is), or answers are decoded twice.
    public init(
        baseURL: URL, requestTimeout: Duration = .seconds(60), maxResponseBytes: Int = 64 << 20,
        client: HTTPClient = HTTPSyncTransport.defaultClient, compression: Bool = true
    ) {
        self.baseURL = baseURL
        self.requestTimeout = requestTimeout
        self.maxResponseBytes = maxResponseBytes
        self.client = client
        self.compression = BodyCompression(enabled: compression)
    }

    /// A request to `endpoint` asking for a compressed answer when compression is on.
    private func request(_ endpoint: SyncEndpoint, token: String?) -> HTTPClientRequest {
        var request = HTTPClientRequest(endpoint, base: baseURL, token: token)
        if compression.enabled { request.headers.add(name: "Accept-Encoding", value: BodyCompression.acceptEncoding) }
        return request
    }

    /// A reply's body, decoded from its `Content-Encoding`.
    private func decodedBody(of response: HTTPClientResponse, limit: Int) async throws -> ByteBuffer {
        let bytes = try await response.body.collect(upTo: limit)
        do {
            return try compression.decoded(bytes, contentEncoding: response.headers.first(name: "Content-Encoding"), limit: limit)
        } catch {
            throw SyncTransportError.invalidResponse("the server's \(response.headers.first(name: "Content-Encoding") ?? "") answer does not decode within \(limit) bytes: \(error)")
        }
    }

    /// The client every transport shares unless given one. It fails a
    /// connection attempt at once instead of retrying it until the request's
    /// deadline (the engine retries with backoff, and reports "offline"
    /// meanwhile), and treats 60 s without a byte as a dead connection (the
    /// server's live stream sends a heartbeat every 15 s). Never shut down.
    public static let defaultClient: HTTPClient = {
        var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(10), read: .seconds(60)))
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    public func push(_ request: PushRequest, token: String?) async throws -> PushResponse {
        try await post(.push, json: ByteBuffer(string: request.jsonText()), token: token)
    }

    /// Encodes the request's body now, and gzips it when a push of its size
    /// would go compressed now.
    public func preparePush(_ request: PushRequest) -> PreparedPush {
        let json = ByteBuffer(string: request.jsonText())
        let gzipped = compression.compressesRequest(of: json.readableBytes) ? try? BodyCompression.gzip(json) : nil
        return PreparedPush(request, json: Data(json.readableBytesView), gzipped: gzipped.map { Data($0.readableBytesView) })
    }

    public func push(_ prepared: PreparedPush, token: String?) async throws -> PushResponse {
        guard let json = prepared.json else { return try await push(prepared.request, token: token) }
        return try await post(.push, json: ByteBuffer(bytes: json), gzipped: prepared.gzipped.map { ByteBuffer(bytes: $0) }, token: token)
    }

    public func pull(_ request: PullRequest, token: String?) async throws -> PullResponse {
        try await post(.pull, request, token: token)
    }

    public func row(scope: String, table: String, rowID: String, token: String?) async throws -> ServerRow? {
        let request = request(.row(scope: scope, table: table, rowID: rowID), token: token)
        let deadline = self.deadline()
        let client = self.client
        return try await Self.mapErrors {
            let response = try await client.execute(request, deadline: deadline)
            let bytes = try await decodedBody(of: response, limit: maxResponseBytes)
            if response.status == .notFound { return nil }
            guard response.status == .ok else { throw Self.failure(response, body: bytes) }
            do {
                return try JSONDecoder().decode(ServerRow.self, from: Data(bytes.readableBytesView))
            } catch {
                throw SyncTransportError.invalidResponse("/v1/rows answered a body that is not a row: \(error)")
            }
        }
    }

    public func live(scopes: [String], token: String?) -> AsyncThrowingStream<LiveMessage, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: LiveMessage.self)
        var request = request(.live(scopes: scopes), token: token)
        request.headers.add(name: "Accept", value: "text/event-stream")
        let client = self.client
        let transport = self
        let task = Task {
            do {
                let response = try await Self.mapErrors {
                    try await client.execute(request, deadline: .distantFuture)
                }
                guard response.status == .ok else {
                    let body = try? await transport.decodedBody(of: response, limit: 1 << 20)
                    throw Self.failure(response, body: body)
                }
                var parser = EventStreamParser()
                let decoder = try BodyCompression.StreamDecoder(contentEncoding: response.headers.first(name: "Content-Encoding"))
                for try await compressed in response.body {
                    let buffer = try decoder.decode(compressed)
                    for event in parser.feed(buffer.readableBytesView) {
                        if let message = LiveMessage(event, following: scopes) { continuation.yield(message) }
                    }
                }
                continuation.finish(throwing: SyncTransportError.unreachable("the live stream ended"))
            } catch {
                continuation.finish(throwing: Self.transportError(error))
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    // MARK: - Blobs

    public func blobOffset(scope: String, sha256: String, token: String?) async throws -> Int64? {
        let request = HTTPClientRequest(.blob(.head, scope: scope, sha256: sha256), base: baseURL, token: token)
        let client = self.client
        let deadline = self.deadline()
        return try await Self.mapErrors {
            let response = try await client.execute(request, deadline: deadline)
            return try SyncAPIRequests.heldBytes(
                status: Int(response.status.code), uploadOffset: response.headers.first(name: "Upload-Offset"),
                failure: { Self.failure(response, body: nil) })
        }
    }

    public func uploadBlob(
        scope: String, sha256: String, from reader: BlobReader, size: Int64, token: String?,
        progress: @escaping BlobProgress
    ) async throws -> Int64 {
        let offset = reader.offset
        var request = HTTPClientRequest(.blob(.put, scope: scope, sha256: sha256), base: baseURL, token: token)
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.headers.add(name: "Upload-Offset", value: String(offset))
        request.headers.add(name: "Upload-Length", value: String(size))
        request.body = .stream(BlobBody(reader: reader, size: size, progress: progress), length: .known(size - offset))
        let client = self.client
        return try await Self.mapErrors {
            // No deadline for the whole body: a large file on a slow link takes what it takes.
            let response = try await client.execute(request, deadline: .distantFuture)
            let body = try await response.body.collect(upTo: 1 << 20)
            guard [200, 201, 204].contains(Int(response.status.code)) else { throw Self.failure(response, body: body) }
            return response.headers.first(name: "Upload-Offset").flatMap(Int64.init) ?? offset
        }
    }

    public func downloadBlob(
        scope: String, sha256: String, into writer: BlobWriter, token: String?,
        progress: @escaping BlobProgress
    ) async throws {
        let offset = writer.held
        var request = HTTPClientRequest(.blob(.get, scope: scope, sha256: sha256), base: baseURL, token: token)
        if offset > 0 { request.headers.add(name: "Range", value: "bytes=\(offset)-") }
        let client = self.client
        try await Self.mapErrors {
            let response = try await client.execute(request, deadline: .distantFuture)
            let expected: HTTPResponseStatus = offset > 0 ? .partialContent : .ok
            guard response.status == expected else {
                throw Self.failure(response, body: try? await response.body.collect(upTo: 1 << 20))
            }
            for try await buffer in response.body {
                try writer.write(Data(buffer.readableBytesView))
                progress(writer.held)
            }
            try writer.flush()
        }
    }

    private func deadline() -> NIODeadline {
        NIODeadline.now()
            + .nanoseconds(
                Int64(requestTimeout.components.seconds) * 1_000_000_000
                    + requestTimeout.components.attoseconds / 1_000_000_000)
    }

    // MARK: - Requests

    private func post<Body: Encodable, Reply: Decodable>(_ endpoint: SyncEndpoint, _ body: Body, token: String?) async throws -> Reply {
        try await post(endpoint, json: ByteBuffer(bytes: try JSONEncoder().encode(body)), token: token)
    }

    /// Posts `json`, gzipped when the server is known to decode gzip (as
    /// `gzipped`, when it was compressed ahead), and plain again when it refuses it.
    private func post<Reply: Decodable>(
        _ endpoint: SyncEndpoint, json: ByteBuffer, gzipped: ByteBuffer? = nil, token: String?
    ) async throws -> Reply {
        let deadline = self.deadline()
        let maxBytes = maxResponseBytes
        let client = self.client
        let compression = self.compression
        func send(compressed: Bool) async throws -> HTTPClientResponse {
            var request = request(endpoint, token: token)
            request.headers.add(name: "Content-Type", value: "application/json")
            if compressed {
                request.headers.add(name: "Content-Encoding", value: "gzip")
                request.body = .bytes(try gzipped ?? BodyCompression.gzip(json))
            } else {
                request.body = .bytes(json)
            }
            return try await client.execute(request, deadline: deadline)
        }
        return try await Self.mapErrors {
            let compressed = compression.compressesRequest(of: json.readableBytes)
            var response = try await send(compressed: compressed)
            if compressed, [415, 400, 413].contains(response.status.code) {
                // A server that does not decode gzip (an older instance behind the same address reads the bytes
                // as JSON and answers 400), or a body past its ratio cap (413): nothing was applied; plain from now on.
                compression.serverRefusedCompressedBody()
                _ = try? await response.body.collect(upTo: 1 << 20)
                response = try await send(compressed: false)
            }
            let bytes = try await decodedBody(of: response, limit: maxBytes)
            guard response.status == .ok else { throw Self.failure(response, body: bytes) }
            do {
                return try PullResponseReader.decode(Reply.self, from: Data(bytes.readableBytesView))
            } catch {
                throw SyncTransportError.invalidResponse("\(endpoint.path) answered a body that is not a \(Reply.self): \(error)")
            }
        }
    }

    private static func failure(_ response: HTTPClientResponse, body: ByteBuffer?) -> SyncTransportError {
        SyncAPIRequests.failure(
            status: Int(response.status.code), body: body.map { Data($0.readableBytesView) },
            retryAfter: response.headers.first(name: "Retry-After"))
    }

    private static func mapErrors<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw transportError(error)
        }
    }

    private static func transportError(_ error: any Error) -> any Error {
        // A local file's failure (a sealed chunk that fails to open, a full disk) is not the network's.
        if error is SyncTransportError || error is CancellationError || error is FerryError { return error }
        if let error = error as? HTTPClientError {
            if error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
                return SyncTransportError.timedOut
            }
            if error == .cancelled { return CancellationError() }
        }
        return SyncTransportError.unreachable(String(describing: error))
    }
}

/// An upload's body: the reader's chunks as buffers, read as
/// AsyncHTTPClient asks for them (so an upload holds one chunk at a time),
/// `progress` told how far into the blob each reaches.
private struct BlobBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let reader: BlobReader
    let size: Int64
    let progress: BlobProgress

    struct AsyncIterator: AsyncIteratorProtocol {
        let reader: BlobReader
        var sent: Int64
        let size: Int64
        let progress: BlobProgress

        mutating func next() async throws -> ByteBuffer? {
            guard sent < size else { return nil }
            guard let chunk = try reader.next() else {
                throw SyncTransportError.invalidResponse("the file ended \(size - sent) bytes early")
            }
            sent += Int64(chunk.count)
            progress(sent)
            return ByteBuffer(bytes: chunk)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(reader: reader, sent: reader.offset, size: size, progress: progress) }
}

extension HTTPClientRequest {
    /// A request to `endpoint` on the server at `base`, bearing `token`:
    /// how every AsyncHTTPClient caller of the API starts one.
    ///
    /// ```swift
    /// var request = HTTPClientRequest(.member(scope: scope, user: "bob"), base: server, token: token)
    /// request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(MemberRequest(role: .write))))
    /// ```
    package init(_ endpoint: SyncEndpoint, base: URL, token: String?) {
        self.init(url: endpoint.url(base: base.absoluteString))
        method = HTTPMethod(rawValue: endpoint.method.rawValue)
        if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
    }
}
