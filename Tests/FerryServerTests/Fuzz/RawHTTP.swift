import Dispatch
import Foundation
import FerryTestSupport

/// One HTTP/1.1 exchange over a real loopback socket: the request goes out
/// byte for byte as built (no client library tidies it), the answer is read
/// until the server closes (`Connection: close`), or briefly on a stream
/// that stays open (the live endpoint). Socket calls block, so each
/// exchange runs on a dispatch thread, never a cooperative one.
struct RawHTTP {
    struct Request: Sendable, CustomStringConvertible {
        var method: String
        /// Path and query, percent-encoded.
        var target: String
        var headers: [(String, String)] = []
        var body: [UInt8] = []

        var description: String {
            let shown = body.count > 300 ? "\(body.count) bytes" : String(decoding: body, as: UTF8.self)
            return "\(method) \(target) \(headers.map { "\($0.0): \($0.1.prefix(40))" }) \(shown)"
        }

        /// The bytes on the wire.
        var wire: [UInt8] {
            var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            if !body.isEmpty || ["POST", "PUT", "PATCH"].contains(method) { head += "Content-Length: \(body.count)\r\n" }
            return Array((head + "\r\n").utf8) + body
        }
    }

    struct Response: Sendable {
        var status: Int
        /// Header names lowercased.
        var headers: [String: String]
        /// The body, chunked transfer coding removed.
        var body: [UInt8]
        /// Headers and body as text, for searching.
        var text: String
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Sends `request` and reads the answer until the server closes, or
    /// for a `stream` that stays open, its head and then `stream` more.
    static func send(_ request: Request, port: Int, stream: Duration? = nil) async throws -> Response {
        let bytes: [UInt8] = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                do {
                    let connection = try RawConnection(port: port)
                    defer { connection.close() }
                    connection.send(bytes: request.wire)
                    let headEnd = Array("\r\n\r\n".utf8)
                    var (bytes, closed) = connection.readBytes(for: .seconds(20), until: { stream != nil && $0.firstRange(of: headEnd) != nil })
                    if let stream, !closed { bytes += connection.readBytes(for: stream).bytes }
                    continuation.resume(returning: bytes)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
        return try parse(bytes, for: request)
    }

    static func parse(_ bytes: [UInt8], for request: Request) throws -> Response {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = bytes.firstRange(of: separator) else {
            throw Failure(description: "no complete answer to \(request): \(String(decoding: bytes.prefix(200), as: UTF8.self))")
        }
        let lines = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            throw Failure(description: "a bad status line to \(request): \(lines[0])")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(bytes[end.upperBound...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" { body = dechunk(body) }
        let text = lines.joined(separator: "\n") + "\n\n" + String(decoding: body, as: UTF8.self)
        return Response(status: status, headers: headers, body: body, text: text)
    }

    /// The chunks' bytes; a stream cut off mid-chunk keeps what arrived.
    static func dechunk(_ bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        var index = 0
        let crlf: [UInt8] = [13, 10]
        while index < bytes.count, let lineEnd = bytes[index...].firstRange(of: crlf) {
            let sizeText = String(decoding: bytes[index..<lineEnd.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size > 0 else { break }
            let start = lineEnd.upperBound
            output += bytes[start..<min(start + size, bytes.count)]
            index = start + size + 2
        }
        return output
    }
}
