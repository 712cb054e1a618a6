import Foundation
import NIOCore
import NIOPosix

/// A raw HTTP/1.1 client on a real socket that reads a server-sent event
/// stream as it arrives, with the time each event came in.
struct EventStreamClient {
    struct Event: Sendable {
        var name: String
        var data: String
        var received: ContinuousClock.Instant
    }

    /// Opens `GET path` and hands each event to `handle` until it returns false
    /// or the server ends the stream. Returns the HTTP status line.
    @discardableResult
    static func stream(
        port: Int,
        path: String,
        token: String,
        handle: @escaping @Sendable (Event) async throws -> Bool
    ) async throws -> String {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nAccept: text/event-stream\r\n\r\n"))
            var text = ""
            var statusLine: String?
            var headersDone = false
            for try await buffer in inbound {
                let received = ContinuousClock.now
                text += String(buffer: buffer)
                if !headersDone {
                    guard let end = text.range(of: "\r\n\r\n") else { continue }
                    // "\r\n" is one Character in Swift: split on newlines, not on "\r".
                    statusLine = text[..<end.lowerBound].split(whereSeparator: \.isNewline).first.map(String.init)
                    text = String(text[end.upperBound...])
                    headersDone = true
                    // Not a stream: the connection stays open for keep-alive, so stop here.
                    guard statusLine?.contains(" 200 ") == true else { return statusLine ?? "" }
                }
                // Chunked framing: keep only event lines.
                while let end = text.range(of: "\n\n") {
                    let block = String(text[..<end.lowerBound])
                    text = String(text[end.upperBound...])
                    var name = ""
                    var data = ""
                    for line in block.split(whereSeparator: \.isNewline) {
                        let line = line.trimmingCharacters(in: .whitespacesAndNewlines)
                        if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                        if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
                    }
                    if !name.isEmpty, try await !handle(Event(name: name, data: data, received: received)) {
                        return statusLine ?? ""
                    }
                }
            }
            return statusLine ?? ""
        }
    }
}

extension EventStreamClient {
    /// One plain request on a real socket (`Connection: close`): the status line and body.
    static func request(port: Int, method: String, path: String, token: String? = nil, body: String = "") async throws -> (status: String, body: String) {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            let authorization = token.map { "Authorization: Bearer \($0)\r\n" } ?? ""
            try await outbound.write(
                ByteBuffer(
                    string: "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(authorization)Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
            )
            var text = ""
            for try await buffer in inbound { text += String(buffer: buffer) }
            let parts = text.components(separatedBy: "\r\n\r\n")
            let status = parts[0].split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            return (status, parts.dropFirst().joined(separator: "\r\n\r\n"))
        }
    }
}
