import CompressNIO
import NIOCore

/// The content codings the API speaks, and the decisions around them as
/// pure functions: which coding a client's `Accept-Encoding` asks for, and
/// whether a compressed request body decompresses within the limits.
///
/// ```swift
/// ContentCoding.preferred(acceptEncoding: "gzip;q=0.8, deflate")   // .deflate
/// ContentCoding.preferred(acceptEncoding: "br")                      // nil: identity
/// try ContentCoding(header: "gzip")?.decompress(body, limit: 4 << 20)
/// ```
package enum ContentCoding: String, Sendable, CaseIterable {
    case gzip
    /// HTTP's `deflate`: zlib's format (RFC 1950), not raw deflate.
    case deflate

    /// A response body shorter than this goes as it is: compressing it
    /// saves less than the headers cost.
    package static let floor = 1024
    /// A body that decompresses to more than this many times its size is
    /// refused, whatever its size (a bomb: megabytes of one repeated byte).
    /// A client that meets it with a real, very repetitive row sends it
    /// again plain, where only its size counts.
    package static let maximumRatio = 500

    var algorithm: CompressionAlgorithm {
        switch self {
        case .gzip: .gzip()
        case .deflate: .zlib()
        }
    }

    /// For a whole response (a page, a row read): zlib's fastest level. A
    /// page of rows is repetitive JSON; level 1 keeps most of the saving
    /// (a first sync of 100k rows: 1.9 MiB instead of 1.8) at a fraction of
    /// the default level's time, which was more than half of the server's
    /// CPU samples in the initial-sync benchmark (BENCHMARKS.md).
    var responseAlgorithm: CompressionAlgorithm {
        let fast = ZlibConfiguration(compressionLevel: Int32(1))
        return switch self {
        case .gzip: .gzip(configuration: fast)
        case .deflate: .zlib(configuration: fast)
        }
    }

    /// For a stream open for hours: a 4 KiB window, memory level 4.
    var streamingAlgorithm: CompressionAlgorithm {
        let small = ZlibConfiguration(windowSize: Int32(12), compressionLevel: Int32(-1), memoryLevel: Int32(4))
        return switch self {
        case .gzip: .gzip(configuration: small)
        case .deflate: .zlib(configuration: small)
        }
    }

    /// The coding a `Content-Encoding` header names: `nil` for none or
    /// `identity`.
    ///
    /// - Throws: ``FerryServerError`` `unsupportedMediaType` (415) for a
    ///   coding this server does not decode, or several stacked.
    package init?(header: String?) throws(FerryServerError) {
        guard let header else { return nil }
        let codings = header.split(separator: ",").map { $0.trimmingHeaderWhitespace.lowercased() }.filter { $0 != "identity" }
        guard !codings.isEmpty else { return nil }
        guard codings.count == 1, let coding = ContentCoding(rawValue: codings[0] == "x-gzip" ? "gzip" : codings[0]) else {
            throw FerryServerError(.unsupportedMediaType, "Content-Encoding `\(header)` is not one this server decodes (gzip or deflate)")
        }
        self = coding
    }

    /// The coding to answer a request with, from its `Accept-Encoding`:
    /// gzip or deflate, whichever has the higher weight (gzip on a tie), or
    /// `nil` for none (identity) when neither is acceptable.
    package static func preferred(acceptEncoding header: String?) -> ContentCoding? {
        guard let header else { return nil }
        var weights: [String: Double] = [:]
        for item in header.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingHeaderWhitespace.lowercased() }
            guard let name = parts.first, !name.isEmpty else { continue }
            var weight = 1.0
            for parameter in parts.dropFirst() where parameter.hasPrefix("q=") {
                weight = Double(parameter.dropFirst(2)) ?? 0
            }
            weights[name] = weight
        }
        func weight(_ coding: ContentCoding) -> Double {
            weights[coding.rawValue] ?? (coding == .gzip ? weights["x-gzip"] : nil) ?? weights["*"] ?? 0
        }
        let gzip = weight(.gzip), deflate = weight(.deflate)
        guard max(gzip, deflate) > 0 else { return nil }
        return gzip >= deflate ? .gzip : .deflate
    }

    /// `body` decompressed, never past `limit` bytes nor ``maximumRatio``
    /// times its own size.
    ///
    /// - Throws: ``FerryServerError`` `payloadTooLarge` (413) past either,
    ///   `badRequest` for bytes that are not this coding.
    package func decompress(_ body: ByteBuffer, limit: Int) throws(FerryServerError) -> ByteBuffer {
        var input = body
        let cap = min(limit, max(body.readableBytes, 1) * Self.maximumRatio)
        do {
            // One byte more than the cap: a body that fills it is over.
            let output = try input.decompress(with: algorithm, maxSize: cap + 1)
            guard output.readableBytes <= cap else { throw CompressNIOError.bufferOverflow }
            return output
        } catch let error as CompressNIOError where error == .bufferOverflow {
            let reason = cap == limit ? "past the limit of \(limit) bytes" : "to over \(Self.maximumRatio) times its \(body.readableBytes) bytes"
            throw FerryServerError(.payloadTooLarge, "the \(rawValue) body decompresses \(reason)")
        } catch {
            throw FerryServerError.badRequest("the body is not valid \(rawValue): \(error)")
        }
    }

    /// `body` compressed whole.
    package func compress(_ body: ByteBuffer) throws -> ByteBuffer {
        var input = body
        return try input.compress(with: algorithm)
    }
}
