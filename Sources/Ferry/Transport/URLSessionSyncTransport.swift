import FerryProtocol
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The `/v1` HTTP API over `URLSession`: the transport an iOS or macOS app
/// uses, shipped in `Ferry` itself so the app links no SwiftNIO.
///
/// Push, pull, row reads and attachment transfers work wherever Foundation
/// has `URLSession` (on Linux through FoundationNetworking, which is how its
/// tests run); attachment bytes move in windows of 4 MiB, never held whole.
/// The
/// live stream needs `URLSession.bytes(for:)`, which Apple platforms have;
/// elsewhere ``live(scopes:token:)`` ends at once and the engine relies on
/// its periodic sync (or use `HTTPSyncTransport` from `FerryHTTPClient`).
///
/// ```swift
/// let transport = URLSessionSyncTransport(baseURL: URL(string: "https://sync.example.com")!)
/// let engine = try SyncEngine(database: database, transport: transport,
///                             configuration: SyncConfiguration(userID: "alice"), token: token)
/// ```
public struct URLSessionSyncTransport: SyncTransport {
    /// The server's address, without `/v1`.
    public let baseURL: URL
    /// How long a push or pull may take, reply included.
    public var requestTimeout: Duration
    /// The largest reply accepted (a pull page is cut at 8 MiB by the server).
    public var maxResponseBytes: Int
    private let session: URLSession

    public init(
        baseURL: URL, requestTimeout: Duration = .seconds(60), maxResponseBytes: Int = 64 << 20,
        session: URLSession = .shared
    ) {
        self.baseURL = baseURL
        self.requestTimeout = requestTimeout
        self.maxResponseBytes = maxResponseBytes
        self.session = session
    }

    public func push(_ request: PushRequest, token: String?) async throws -> PushResponse {
        try await post(.push, json: Data(request.jsonText().utf8), token: token)
    }

    /// Encodes the request's body now; this transport sends it uncompressed.
    public func preparePush(_ request: PushRequest) -> PreparedPush {
        PreparedPush(request, json: Data(request.jsonText().utf8))
    }

    public func push(_ prepared: PreparedPush, token: String?) async throws -> PushResponse {
        try await post(.push, json: prepared.json ?? Data(prepared.request.jsonText().utf8), token: token)
    }

    public func pull(_ request: PullRequest, token: String?) async throws -> PullResponse {
        try await post(.pull, request, token: token)
    }

    public func row(scope: String, table: String, rowID: String, token: String?) async throws -> ServerRow? {
        let request = try self.request(.row(scope: scope, table: table, rowID: rowID), token: token)
        let (body, response) = try await send(request)
        if response.statusCode == 404 { return nil }
        guard response.statusCode == 200 else { throw Self.failure(response, body: body) }
        do {
            return try JSONDecoder().decode(ServerRow.self, from: body)
        } catch {
            throw SyncTransportError.invalidResponse("/v1/rows answered a body that is not a row: \(error)")
        }
    }

    public func live(scopes: [String], token: String?) -> AsyncThrowingStream<LiveMessage, any Error> {
        #if canImport(FoundationNetworking)
            AsyncThrowingStream { continuation in
                continuation.finish(
                    throwing: SyncTransportError.unreachable(
                        "the live stream needs URLSession.bytes(for:), which this platform lacks; use FerryHTTPClient's HTTPSyncTransport"))
            }
        #else
            let (stream, continuation) = AsyncThrowingStream.makeStream(of: LiveMessage.self)
            var request: URLRequest
            do {
                request = try self.request(.live(scopes: scopes), token: token)
            } catch {
                continuation.finish(throwing: error)
                return stream
            }
            request.timeoutInterval = 60  // the server sends a heartbeat every 15 s
            request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
            let session = self.session
            let task = Task {
                do {
                    let (bytes, response) = try await Self.mapErrors { try await session.bytes(for: request) }
                    guard let http = response as? HTTPURLResponse else {
                        throw SyncTransportError.invalidResponse("the live stream answered no HTTP response")
                    }
                    guard http.statusCode == 200 else { throw Self.failure(http, body: Data()) }
                    var parser = EventStreamParser()
                    var pending: [UInt8] = []
                    for try await byte in bytes {
                        pending.append(byte)
                        // Feed at line ends: the parser takes any split, this keeps the calls few.
                        guard byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") else { continue }
                        for event in parser.feed(pending) {
                            if let message = LiveMessage(event, following: scopes) { continuation.yield(message) }
                        }
                        pending.removeAll(keepingCapacity: true)
                    }
                    continuation.finish(throwing: SyncTransportError.unreachable("the live stream ended"))
                } catch {
                    continuation.finish(throwing: Self.transportError(error))
                }
            }
            continuation.onTermination = { _ in task.cancel() }
            return stream
        #endif
    }

    // MARK: - Blobs

    public func blobOffset(scope: String, sha256: String, token: String?) async throws -> Int64? {
        let request = try blobRequest(.head, scope: scope, sha256: sha256, token: token)
        let (body, response) = try await send(request)
        return try SyncAPIRequests.heldBytes(
            status: response.statusCode, uploadOffset: response.value(forHTTPHeaderField: "Upload-Offset"),
            failure: { Self.failure(response, body: body) })
    }

    /// Sends the blob in windows of up to 4 MiB, one `PUT` each at its
    /// `Upload-Offset` (the server keeps each window and answers 204 until
    /// the last): only the window is in memory, never the file, and
    /// `progress` is told after each. Cancelling the task cancels the
    /// request under way.
    public func uploadBlob(
        scope: String, sha256: String, from reader: BlobReader, size: Int64, token: String?,
        progress: @escaping BlobProgress
    ) async throws -> Int64 {
        var offset = reader.offset
        while true {
            var window = Data()
            while window.count < Self.blobWindow, let chunk = try reader.next() { window.append(chunk) }
            var request = try blobRequest(.put, scope: scope, sha256: sha256, token: token)
            request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
            request.setValue(String(offset), forHTTPHeaderField: "Upload-Offset")
            request.setValue(String(size), forHTTPHeaderField: "Upload-Length")
            let session = self.session
            let body = window
            let (data, response) = try await Self.mapErrors { try await session.upload(for: request, from: body) }
            guard let http = response as? HTTPURLResponse else {
                throw SyncTransportError.invalidResponse("PUT /v1/blobs answered no HTTP response")
            }
            guard [200, 201, 204].contains(http.statusCode) else { throw Self.failure(http, body: data) }
            let held = http.value(forHTTPHeaderField: "Upload-Offset").flatMap(Int64.init) ?? offset + Int64(window.count)
            progress(held)
            // Done, or out of step with the reader (the caller asks the server again).
            guard http.statusCode == 204, !window.isEmpty, held == offset + Int64(window.count), held < size else { return held }
            offset = held
        }
    }

    /// Fetches the blob in `Range` windows of up to 4 MiB, each written to
    /// `writer` (and synced) before the next is asked for: only the window
    /// is in memory, nothing lands in a temporary file, and `progress` is
    /// told after each. Cancelling the task cancels the request under way.
    public func downloadBlob(
        scope: String, sha256: String, into writer: BlobWriter, token: String?,
        progress: @escaping BlobProgress
    ) async throws {
        while true {
            let start = writer.held
            var request = try blobRequest(.get, scope: scope, sha256: sha256, token: token)
            request.setValue("bytes=\(start)-\(start + Int64(Self.blobWindow) - 1)", forHTTPHeaderField: "Range")
            var (data, http) = try await send(request)
            // A range of an empty blob is unsatisfiable: ask for all of it.
            if http.statusCode == 416, start == 0 {
                request.setValue(nil, forHTTPHeaderField: "Range")
                (data, http) = try await send(request)
            }
            // The window asked for, and nothing else: a reply that ignored the Range is not appended.
            let range = http.statusCode == 206 ? http.value(forHTTPHeaderField: "Content-Range").flatMap(Self.contentRange) : nil
            guard (http.statusCode == 200 && start == 0) || range?.start == start else {
                if http.statusCode == 200 || http.statusCode == 206 {
                    throw SyncTransportError.invalidResponse("GET /v1/blobs answered another range than bytes=\(start)-")
                }
                throw Self.failure(http, body: data)
            }
            try writer.write(data)
            try writer.flush()
            progress(writer.held)
            guard let range, !data.isEmpty, writer.held < range.total else { return }
        }
    }

    /// `bytes first-last/total` from a `Content-Range` header.
    static func contentRange(_ header: String) -> (start: Int64, total: Int64)? {
        guard header.hasPrefix("bytes ") else { return nil }
        let parts = header.dropFirst("bytes ".count).split(separator: "/")
        guard parts.count == 2, let total = Int64(parts[1]),
            let start = parts[0].split(separator: "-").first.flatMap({ Int64($0) })
        else { return nil }
        return (start, total)
    }

    /// The most bytes of a blob one request carries.
    static let blobWindow = 4 << 20

    private func blobRequest(_ method: SyncEndpoint.Method, scope: String, sha256: String, token: String?) throws -> URLRequest {
        var request = try self.request(.blob(method, scope: scope, sha256: sha256), token: token)
        // A large file takes what it takes; the timeout bounds silence, not the whole transfer.
        request.timeoutInterval = max(request.timeoutInterval, 60)
        return request
    }

    // MARK: - Requests

    private func request(_ endpoint: SyncEndpoint, token: String?) throws -> URLRequest {
        let address = endpoint.url(base: baseURL.absoluteString)
        guard let url = URL(string: address) else { throw SyncTransportError.invalidResponse("cannot form a URL for \(endpoint): \(address)") }
        var request = URLRequest(url: url)
        request.httpMethod = endpoint.method.rawValue
        request.timeoutInterval = Double(requestTimeout.components.seconds) + Double(requestTimeout.components.attoseconds) / 1e18
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        return request
    }

    private func post<Body: Encodable, Reply: Decodable>(_ endpoint: SyncEndpoint, _ body: Body, token: String?) async throws -> Reply {
        try await post(endpoint, json: try JSONEncoder().encode(body), token: token)
    }

    private func post<Reply: Decodable>(_ endpoint: SyncEndpoint, json: Data, token: String?) async throws -> Reply {
        var request = try self.request(endpoint, token: token)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = json
        let (data, response) = try await send(request)
        guard response.statusCode == 200 else { throw Self.failure(response, body: data) }
        do {
            return try PullResponseReader.decode(Reply.self, from: data)
        } catch {
            throw SyncTransportError.invalidResponse("\(endpoint.path) answered a body that is not a \(Reply.self): \(error)")
        }
    }

    private func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let session = self.session
        let (data, response) = try await Self.mapErrors { try await session.data(for: request) }
        guard let http = response as? HTTPURLResponse else {
            throw SyncTransportError.invalidResponse("\(request.url?.path ?? "the server") answered no HTTP response")
        }
        guard data.count <= maxResponseBytes else {
            throw SyncTransportError.invalidResponse("the reply is larger than \(maxResponseBytes) bytes")
        }
        return (data, http)
    }

    private static func failure(_ response: HTTPURLResponse, body: Data) -> SyncTransportError {
        SyncAPIRequests.failure(status: response.statusCode, body: body, retryAfter: response.value(forHTTPHeaderField: "Retry-After"))
    }

    private static func mapErrors<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw transportError(error)
        }
    }

    private static func transportError(_ error: any Error) -> any Error {
        if error is SyncTransportError || error is CancellationError { return error }
        if let error = error as? URLError {
            switch error.code {
            case .timedOut: return SyncTransportError.timedOut
            case .cancelled: return CancellationError()
            default: break
            }
        }
        return SyncTransportError.unreachable(String(describing: error))
    }
}
