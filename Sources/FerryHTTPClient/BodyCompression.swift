import CompressNIO
import NIOConcurrencyHelpers
import NIOCore

/// How the AsyncHTTPClient transport compresses: answers are asked for
/// compressed (`Accept-Encoding: gzip, deflate`) and decompressed here
/// within the reply limit; a request body of at least ``floor`` bytes is
/// sent gzipped once the server has shown it speaks gzip (a compressed
/// answer), and sent plain again if a server refuses it: 415, 400 from an
/// older instance behind the same address during an upgrade (it reads the
/// bytes as JSON), or 413 for a body that decompresses past the server's
/// ratio cap (a very repetitive row; plain, it is judged by its size).
///
/// ```swift
/// let transport = HTTPSyncTransport(baseURL: url, compression: false)   // every byte as it is
/// ```
final class BodyCompression: Sendable {
    static let acceptEncoding = "gzip, deflate"
    /// A request body shorter than this goes as it is.
    static let floor = 1024

    let enabled: Bool
    private let serverCompresses = NIOLockedValueBox(false)

    init(enabled: Bool) {
        self.enabled = enabled
    }

    /// Whether to gzip a request body of `count` bytes.
    func compressesRequest(of count: Int) -> Bool {
        enabled && count >= Self.floor && serverCompresses.withLockedValue { $0 }
    }

    /// The server refused a compressed body: send plain ones from now on,
    /// until it answers compressed again.
    func serverRefusedCompressedBody() {
        serverCompresses.withLockedValue { $0 = false }
    }

    /// At zlib's fastest level, as the server compresses its answers: a
    /// push is repetitive JSON, and level 1 keeps most of the saving at a
    /// fraction of the default level's time (BENCHMARKS.md, the drain).
    static func gzip(_ body: ByteBuffer) throws -> ByteBuffer {
        var input = body
        return try input.compress(with: .gzip(configuration: ZlibConfiguration(compressionLevel: 1)))
    }

    /// `body` as its `Content-Encoding` says, decoded, at most `limit`
    /// bytes; notes that the server compresses.
    func decoded(_ body: ByteBuffer, contentEncoding: String?, limit: Int) throws -> ByteBuffer {
        guard let algorithm = Self.algorithm(contentEncoding) else { return body }
        serverCompresses.withLockedValue { $0 = true }
        var input = body
        // The reply limit holds for what it decodes to (compress-nio stops allocating there).
        let output = try input.decompress(with: algorithm, maxSize: limit + 1)
        guard output.readableBytes <= limit else { throw CompressNIOError.bufferOverflow }
        return output
    }

    static func algorithm(_ contentEncoding: String?) -> CompressionAlgorithm? {
        switch contentEncoding?.trimmingCharacters(in: .whitespaces).lowercased() {
        case "gzip", "x-gzip": .gzip()
        case "deflate": .zlib()
        default: nil
        }
    }

    /// Decodes a compressed stream (the live stream) as its chunks arrive.
    final class StreamDecoder {
        private let decompressor: (any NIODecompressor)?

        init(contentEncoding: String?) throws {
            decompressor = BodyCompression.algorithm(contentEncoding)?.decompressor
            try decompressor?.startStream()
        }

        func decode(_ chunk: ByteBuffer) throws -> ByteBuffer {
            guard let decompressor else { return chunk }
            var input = chunk
            var output = ByteBuffer()
            while input.readableBytes > 0 {
                let before = input.readableBytes
                var window = ByteBufferAllocator().buffer(capacity: max(4 * input.readableBytes, 16 << 10))
                do {
                    try input.decompressStream(to: &window, with: decompressor)
                } catch let error as CompressNIOError where error == .bufferOverflow || error == .inputBufferOverflow {
                    // The window filled: keep what it holds and go on with the rest.
                }
                // Bytes after the end of the compressed stream: never spin on them.
                guard input.readableBytes < before || window.readableBytes > 0 else {
                    throw CompressNIOError.corruptData
                }
                output.writeBuffer(&window)
            }
            return output
        }
    }
}
