import CompressNIO
import HTTPTypes
import Hummingbird
import NIOCore

/// Compresses `/v1` answers for a client that accepts it
/// (`Accept-Encoding: gzip` or `deflate`): pull pages, rows, scope lists,
/// and the live stream, where each event is flushed as it is written so
/// none waits for the next (with a small zlib window: a stream stays open
/// for hours). Blob bytes go as they are (they are read in ranges, and
/// attachments are mostly compressed already), and so does a body shorter
/// than ``ContentCoding/floor`` or an error (made by the error middleware
/// outside this one, and small).
///
/// ```swift
/// router.group("v1").add(middleware: ResponseCompressionMiddleware())
/// ```
struct ResponseCompressionMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        guard request.method != .head, !request.uri.path.hasPrefix("/v1/blobs/"),
            response.headers[.contentEncoding] == nil,
            let coding = ContentCoding.preferred(acceptEncoding: request.headers[.acceptEncoding])
        else { return response }
        // An answer that could have come compressed says what it depends on, compressed or not.
        response.headers[values: .vary].append("Accept-Encoding")
        if let length = response.body.contentLength, length < ContentCoding.floor { return response }
        let body = response.body
        let streaming = response.headers[.contentType]?.hasPrefix("text/event-stream") == true
        response.headers[.contentEncoding] = coding.rawValue
        response.headers[.contentLength] = nil
        response.body = ResponseBody { writer in
            try await body.write(try CompressingWriter(writer, coding: coding, streaming: streaming))
        }
        return response
    }
}

/// A body writer that compresses what it is given into another, one
/// flushed block a write.
struct CompressingWriter: ResponseBodyWriter {
    private var inner: any ResponseBodyWriter
    private let compressor: any NIOCompressor

    /// - Parameter streaming: a long-lived stream: a 4 KiB window and
    ///   little state (about 24 KiB of zlib memory instead of 256 KiB).
    init(_ inner: any ResponseBodyWriter, coding: ContentCoding, streaming: Bool) throws {
        self.inner = inner
        compressor = (streaming ? coding.streamingAlgorithm : coding.responseAlgorithm).compressor
        try compressor.startStream()
    }

    mutating func write(_ buffer: ByteBuffer) async throws {
        var input = buffer
        repeat {
            let before = input.readableBytes
            let output = try input.compressStream(with: compressor, flush: .sync)
            if output.readableBytes > 0 { try await inner.write(output) }
            // Whatever the output buffer could not take goes in the next pass; no pass may stall.
            guard input.readableBytes < before || input.readableBytes == 0 else { throw CompressNIOError.bufferOverflow }
        } while input.readableBytes > 0
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        var empty = ByteBuffer()
        let last = try empty.compressStream(with: compressor, flush: .finish)
        try compressor.finishStream()
        if last.readableBytes > 0 { try await inner.write(last) }
        try await inner.finish(trailingHeaders)
    }
}
