/// One request of the `/v1` API: its method and its path, every segment and
/// query value percent-encoded the same way. Every client builds its
/// requests here (both transports and `ferry-notes`), and a test checks each
/// endpoint against the OpenAPI document the server validates with, so an
/// address is written once.
///
/// ```swift
/// let endpoint = SyncEndpoint.member(scope: "nb-1@alice", user: "bob smith")
/// endpoint.method                     // .put
/// endpoint.template                   // "/v1/scopes/{scope}/members/{user}"
/// endpoint.path                       // "/v1/scopes/nb-1%40alice/members/bob%20smith"
/// endpoint.url(base: "https://sync.example.com/")   // "https://sync.example.com/v1/scopes/…"
/// ```
public struct SyncEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// An HTTP method the API uses.
    public enum Method: String, Sendable, Hashable {
        case get = "GET", head = "HEAD", post = "POST", put = "PUT", delete = "DELETE"
    }

    public let method: Method
    /// The path as the OpenAPI document names it, parameters in braces.
    public let template: String
    /// The path with its parameters filled in and percent-encoded, and the
    /// query, if any.
    public let path: String

    private init(_ method: Method, _ template: String, _ values: [String] = [], query: [(String, String)] = []) {
        self.method = method
        self.template = template
        var path = ""
        var values = values.makeIterator()
        for segment in template.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            path += "/"
            path += segment.hasPrefix("{") ? Self.encoded(values.next() ?? "") : String(segment)
        }
        if !query.isEmpty {
            path += "?" + query.map { Self.encoded($0.0) + "=" + Self.encoded($0.1) }.joined(separator: "&")
        }
        self.path = path
    }

    /// The full address on a server at `base` (with or without a trailing `/`).
    public func url(base: String) -> String {
        var base = base
        while base.hasSuffix("/") { base.removeLast() }
        return base + path
    }

    public var description: String { "\(method.rawValue) \(template)" }

    // MARK: - The API

    /// `POST /v1/push`: a ``PushRequest``, answered by a ``PushResponse``.
    public static let push = SyncEndpoint(.post, "/v1/push")
    /// `POST /v1/pull`: a ``PullRequest``, answered by a ``PullResponse``.
    public static let pull = SyncEndpoint(.post, "/v1/pull")

    /// `GET /v1/rows/{scope}/{table}/{rowID}`: one row as the server holds it.
    public static func row(scope: String, table: String, rowID: String) -> SyncEndpoint {
        SyncEndpoint(.get, "/v1/rows/{scope}/{table}/{rowID}", [scope, table, rowID])
    }

    /// `GET /v1/live`: server-sent news for `scopes`, with the rows of small
    /// changes when `rows` is set.
    public static func live(scopes: [String], rows: Bool = true) -> SyncEndpoint {
        SyncEndpoint(.get, "/v1/live", query: scopes.map { ("scope", $0) } + (rows ? [("rows", "true")] : []))
    }

    /// `HEAD`, `PUT` or `GET /v1/blobs/{scope}/{sha256}`: how much of a blob
    /// the server holds, its bytes sent, or its bytes read.
    public static func blob(_ method: Method, scope: String, sha256: String) -> SyncEndpoint {
        SyncEndpoint(method, "/v1/blobs/{scope}/{sha256}", [scope, sha256])
    }

    /// `GET /v1/scopes`: the caller's scopes, a ``ScopeList``.
    public static let scopes = SyncEndpoint(.get, "/v1/scopes")
    /// `POST /v1/scopes`: a ``CreateScopeRequest``.
    public static let createScope = SyncEndpoint(.post, "/v1/scopes")

    /// `PUT /v1/scopes/{scope}/members/{user}`: a ``MemberRequest``.
    public static func member(scope: String, user: String) -> SyncEndpoint {
        SyncEndpoint(.put, "/v1/scopes/{scope}/members/{user}", [scope, user])
    }

    /// `DELETE /v1/scopes/{scope}/members/{user}`: the owner takes a member out.
    public static func removeMember(scope: String, user: String) -> SyncEndpoint {
        SyncEndpoint(.delete, "/v1/scopes/{scope}/members/{user}", [scope, user])
    }

    /// Every endpoint, with sample parameters: what the agreement test
    /// checks against the document.
    public static var all: [SyncEndpoint] {
        [
            push, pull, row(scope: "s", table: "t", rowID: "r"), live(scopes: ["s"]),
            blob(.head, scope: "s", sha256: "h"), blob(.put, scope: "s", sha256: "h"), blob(.get, scope: "s", sha256: "h"),
            scopes, createScope, member(scope: "s", user: "u"), removeMember(scope: "s", user: "u"),
        ]
    }

    // MARK: - Encoding

    /// `text` with every byte outside RFC 3986's unreserved set
    /// (`A–Z a–z 0–9 - . _ ~`) percent-encoded, as UTF-8.
    static func encoded(_ text: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                bytes.append(byte)
            default:
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
