import Ferry
import FerryProtocol
import FerryServer
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import Synchronization

/// The transport of ``InMemorySyncServer``: each call becomes the HTTP
/// request the socket transports send (the same `SyncEndpoint` addresses,
/// headers and JSON), answered by the server's router in this process, and
/// its reply is read as theirs are, errors included.
///
/// ```swift
/// let server = try await InMemorySyncServer()
/// let reply = try await server.transport.push(request, token: try await server.token(for: "alice"))
/// ```
public struct InMemorySyncTransport: SyncTransport {
    let responder: RouterResponder<FerryRequestContext>
    let logger: Logger

    public func push(_ request: PushRequest, token: String?) async throws -> PushResponse {
        try await post(.push, request, token: token)
    }

    public func pull(_ request: PullRequest, token: String?) async throws -> PullResponse {
        try await post(.pull, request, token: token)
    }

    public func row(scope: String, table: String, rowID: String, token: String?) async throws -> ServerRow? {
        let endpoint = SyncEndpoint.row(scope: scope, table: table, rowID: rowID)
        let reply = try await send(endpoint, token: token)
        if reply.status == 404 { return nil }
        return try reply.decoded(ServerRow.self, from: endpoint)
    }

    /// Reads the route's event stream as it is written. Ending the stream
    /// (or cancelling its reader) closes the request's connection, which
    /// ends the route's subscription as a closed socket would.
    public func live(scopes: [String], token: String?) -> AsyncThrowingStream<LiveMessage, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: LiveMessage.self)
        let channel = NIOAsyncTestingChannel()
        let task = Task {
            do {
                let response = try await respond(
                    to: .live(scopes: scopes), token: token, headers: [.accept: "text/event-stream"], channel: channel)
                guard response.status == .ok else {
                    let collected = CollectingWriter()
                    try await response.body.write(collected)
                    throw Self.failure(status: response.status.code, body: collected.bytes.value, headers: response.headers)
                }
                var parser = EventStreamParser()
                try await response.body.write(
                    StreamingWriter { buffer in
                        for event in parser.feed(buffer.readableBytesView) {
                            if let message = LiveMessage(event, following: scopes) { continuation.yield(message) }
                        }
                    })
                continuation.finish(throwing: SyncTransportError.unreachable("the live stream ended"))
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in
            task.cancel()
            Task { try? await channel.close() }
        }
        return stream
    }

    // MARK: - Blobs

    public func blobOffset(scope: String, sha256: String, token: String?) async throws -> Int64? {
        let reply = try await send(.blob(.head, scope: scope, sha256: sha256), token: token)
        return try SyncAPIRequests.heldBytes(status: reply.status, uploadOffset: reply.headers[Self.uploadOffset], failure: { reply.failure })
    }

    /// Streams the blob from the reader's offset in one `PUT`, as
    /// `HTTPSyncTransport` does, telling `progress` as each chunk goes.
    public func uploadBlob(
        scope: String, sha256: String, from reader: BlobReader, size: Int64, token: String?,
        progress: @escaping BlobProgress
    ) async throws -> Int64 {
        let offset = reader.offset
        let sent = Counter(offset)
        let chunks = AsyncThrowingStream<ByteBuffer, any Error> {
            guard let chunk = try reader.next() else { return nil }
            progress(sent.add(Int64(chunk.count)))
            return ByteBuffer(bytes: chunk)
        }
        let response = try await respond(
            to: .blob(.put, scope: scope, sha256: sha256), token: token, body: RequestBody(asyncSequence: chunks),
            headers: [
                .contentType: "application/octet-stream", .contentLength: String(size - offset),
                Self.uploadOffset: String(offset), Self.uploadLength: String(size),
            ])
        let reply = try await Reply(response, method: .put)
        guard [200, 201, 204].contains(reply.status) else { throw reply.failure }
        return reply.headers[Self.uploadOffset].flatMap(Int64.init) ?? offset
    }

    /// Fetches the rest of the blob in one `GET` with a `Range` from the
    /// bytes `writer` holds, written as it arrives.
    public func downloadBlob(
        scope: String, sha256: String, into writer: BlobWriter, token: String?,
        progress: @escaping BlobProgress
    ) async throws {
        let endpoint = SyncEndpoint.blob(.get, scope: scope, sha256: sha256)
        let start = writer.held
        var response = try await respond(to: endpoint, token: token, headers: [.range: "bytes=\(start)-"])
        // A range of an empty blob is unsatisfiable: ask for all of it.
        if response.status.code == 416, start == 0 {
            response = try await respond(to: endpoint, token: token)
        }
        guard response.status == .partialContent || (response.status == .ok && start == 0) else {
            let collected = CollectingWriter()
            try await response.body.write(collected)
            throw Self.failure(status: response.status.code, body: collected.bytes.value, headers: response.headers)
        }
        try await response.body.write(
            StreamingWriter { buffer in
                try writer.write(Data(buffer.readableBytesView))
                progress(writer.held)
            })
        try writer.flush()
        progress(writer.held)
    }

    // MARK: - Requests

    static let uploadOffset = HTTPField.Name("Upload-Offset")!
    static let uploadLength = HTTPField.Name("Upload-Length")!

    /// A reply read whole.
    struct Reply {
        var status: Int
        var headers: HTTPFields
        var body: Data

        /// Reads `response` whole; a reply to HEAD carries no body on the wire.
        init(_ response: Response, method: SyncEndpoint.Method) async throws {
            let collected = CollectingWriter()
            try await response.body.write(collected)
            status = response.status.code
            headers = response.headers
            body = method == .head ? Data() : collected.bytes.value
        }

        var failure: SyncTransportError { InMemorySyncTransport.failure(status: status, body: body, headers: headers) }

        func decoded<T: Decodable>(_ type: T.Type, from endpoint: SyncEndpoint) throws -> T {
            guard status == 200 else { throw failure }
            do {
                return try JSONDecoder().decode(T.self, from: body)
            } catch {
                throw SyncTransportError.invalidResponse("\(endpoint.path) answered a body that is not a \(T.self): \(error)")
            }
        }
    }

    private func post<Body: Encodable, Reply: Decodable>(_ endpoint: SyncEndpoint, _ body: Body, token: String?) async throws -> Reply {
        let encoded = try JSONEncoder().encode(body)
        return try await send(endpoint, token: token, body: ByteBuffer(bytes: encoded), headers: [.contentType: "application/json"])
            .decoded(Reply.self, from: endpoint)
    }

    private func send(_ endpoint: SyncEndpoint, token: String?, body: ByteBuffer? = nil, headers: HTTPFields = [:]) async throws -> Reply {
        var headers = headers
        if let body { headers[.contentLength] = String(body.readableBytes) }
        let response = try await respond(
            to: endpoint, token: token, body: RequestBody(buffer: body ?? ByteBuffer()), headers: headers)
        return try await Reply(response, method: endpoint.method)
    }

    private func respond(
        to endpoint: SyncEndpoint, token: String?, body: RequestBody = RequestBody(buffer: ByteBuffer()), headers: HTTPFields = [:],
        channel: NIOAsyncTestingChannel = NIOAsyncTestingChannel()
    ) async throws -> Response {
        var fields = headers
        if let token { fields[.authorization] = "Bearer \(token)" }
        let head = HTTPRequest(
            method: HTTPRequest.Method(endpoint.method.rawValue)!, scheme: "http", authority: "in-memory",
            path: endpoint.url(base: ""), headerFields: fields)
        let request = Request(head: head, body: body)
        let context = FerryRequestContext(source: ApplicationRequestContextSource(channel: channel, logger: logger))
        do {
            return try await responder.respond(to: request, context: context)
        } catch let error as any HTTPResponseError {
            // What Hummingbird's server does with an error the middleware left.
            return try error.response(from: request, context: context)
        }
    }

    private static func failure(status: Int, body: Data, headers: HTTPFields) -> SyncTransportError {
        SyncAPIRequests.failure(status: status, body: body, retryAfter: headers[.retryAfter])
    }
}

/// The bytes an upload has handed over so far.
private final class Counter: Sendable {
    private let value: Mutex<Int64>

    init(_ start: Int64) { value = Mutex(start) }

    func add(_ count: Int64) -> Int64 {
        value.withLock {
            $0 += count
            return $0
        }
    }
}

/// Collects a response body whole.
private struct CollectingWriter: ResponseBodyWriter {
    final class Box: @unchecked Sendable {
        var value = Data()
    }
    let bytes = Box()

    mutating func write(_ buffer: ByteBuffer) async throws {
        bytes.value.append(contentsOf: buffer.readableBytesView)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}

/// Hands each buffer of a response body to `handle` as the route writes it.
private struct StreamingWriter: ResponseBodyWriter {
    var handle: (ByteBuffer) throws -> Void

    mutating func write(_ buffer: ByteBuffer) async throws {
        try handle(buffer)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
