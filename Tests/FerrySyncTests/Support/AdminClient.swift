import AsyncHTTPClient
import FerryProtocol
import Foundation
import NIOCore
import NIOHTTP1

/// The app's backend, as a test plays it: JSON over a real socket to the
/// admin port, with the admin credential.
struct AdminClient: Sendable {
    static let token = "admin-token-for-tests-0123456789abcdef"

    let base: String
    var token = AdminClient.token

    init(port: Int) {
        base = "http://127.0.0.1:\(port)"
    }

    struct Reply: Sendable {
        var status: Int
        var body: Data

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try JSONDecoder().decode(T.self, from: body)
        }

        var text: String { String(decoding: body, as: UTF8.self) }
    }

    func send(_ method: HTTPMethod, _ path: String, json: String? = nil, headers: [(String, String)] = []) async throws -> Reply {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 64 << 20)
        return Reply(status: Int(response.status.code), body: Data(buffer: body))
    }

    func send(_ method: HTTPMethod, _ path: String, body: some Encodable) async throws -> Reply {
        try await send(method, path, json: String(decoding: try JSONEncoder().encode(body), as: UTF8.self))
    }

    /// A backend write that must succeed.
    func write(_ request: BackendWriteRequest) async throws -> BackendWriteResponse {
        let reply = try await send(.POST, "/admin/v1/writes", body: request)
        guard reply.status == 200 else { throw AdminClientError(reply: reply) }
        return try reply.decode(BackendWriteResponse.self)
    }

    /// Every change after `cursor`, page by page, and the cursor after them.
    func changes(after cursor: String? = nil, query: String = "", limit: Int = 100) async throws -> (changes: [ChangeFeedEntry], cursor: String) {
        var cursor = cursor
        var changes: [ChangeFeedEntry] = []
        while true {
            var path = "/admin/v1/changes?limit=\(limit)\(query)"
            if let cursor { path += "&cursor=" + cursor.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }
            let reply = try await send(.GET, path)
            guard reply.status == 200 else { throw AdminClientError(reply: reply) }
            let page = try reply.decode(ChangeFeedPage.self)
            changes += page.changes
            cursor = page.cursor
            if !page.hasMore { return (changes, page.cursor) }
        }
    }
}

struct AdminClientError: Error, CustomStringConvertible {
    let reply: AdminClient.Reply
    var description: String { "admin API answered \(reply.status): \(reply.text)" }
}
