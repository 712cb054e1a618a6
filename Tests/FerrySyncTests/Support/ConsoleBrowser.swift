import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A person at the console, over a real socket: keeps its cookies like a
/// browser, does not follow redirects (tests look at them), and fills in
/// the CSRF token of the last page it read unless told otherwise.
final class ConsoleBrowser: @unchecked Sendable {
    let base: String
    private let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
    private(set) var cookies: [String: String] = [:]
    private(set) var lastPage = ""

    struct Page: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var text: String
        var location: String? { headers.first(name: "Location") }
    }

    init(port: Int) {
        base = "http://127.0.0.1:\(port)"
    }

    deinit {
        try? client.syncShutdown()
    }

    /// The CSRF token the last page's forms carry.
    var csrf: String? {
        guard let range = lastPage.range(of: #"name="csrf" value=""#) else { return nil }
        return String(lastPage[range.upperBound...].prefix { $0 != "\"" })
    }

    @discardableResult
    func get(_ path: String) async throws -> Page {
        try await send(.GET, path, form: nil)
    }

    /// Posts `fields` as a form, with the page's CSRF token unless `csrf` says otherwise (`""`: none).
    @discardableResult
    func post(_ path: String, _ fields: [(String, String)], csrf: String? = nil) async throws -> Page {
        let token = csrf ?? self.csrf ?? ""
        let all = (token.isEmpty ? [] : [("csrf", token)]) + fields
        let body = all.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
        return try await send(.POST, path, form: body)
    }

    func signIn(token: String) async throws -> Page {
        try await get("/console/login")
        return try await post("/console/login", [("token", token)])
    }

    private func send(_ method: HTTPMethod, _ path: String, form: String?) async throws -> Page {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        if !cookies.isEmpty { request.headers.add(name: "Cookie", value: cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")) }
        if let form {
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: form))
        }
        let response = try await client.execute(request, timeout: .seconds(30))
        for header in response.headers["Set-Cookie"] {
            let pair = header.split(separator: ";")[0].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let value = pair.count > 1 ? String(pair[1]) : ""
            if header.contains("Max-Age=0") || value.isEmpty { cookies[String(pair[0])] = nil } else { cookies[String(pair[0])] = value }
        }
        let text = String(buffer: try await response.body.collect(upTo: 16 << 20))
        if response.headers.first(name: "Content-Type")?.hasPrefix("text/html") == true { lastPage = text }
        return Page(status: Int(response.status.code), headers: response.headers, text: text)
    }

    static func encode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}
