import AsyncHTTPClient
import Ferry
import FerryProtocol
@testable import FerryServer
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import FerryTestSupport

/// The console's forms and pages probed with hostile input over a real
/// socket, seeded: forms posted anonymously, without or with a wrong CSRF
/// token, with broken encodings, huge or repeated fields, markup and
/// control bytes, and pages asked for with hostile queries and cookies.
///
/// - No answer is a 5xx, and the server still serves at the end.
/// - A form without a session or without the session's token changes nothing.
/// - Markup sent in is never served back as markup.
///
/// `FERRY_FUZZ_SEED` picks another seed.
@Suite(.postgresTurns) struct ConsoleFuzzTests {
    static let seed = ProcessInfo.processInfo.environment["FERRY_FUZZ_SEED"].flatMap(UInt64.init) ?? 20_261_127
    static let rounds = 400
    static let payload = "<script>alert('x')</script>"

    /// SplitMix64: the same seed gives the same probes.
    struct Generator {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
        mutating func pick<T>(_ values: [T]) -> T { values[next(values.count)] }
    }

    static let hostileValues = [
        payload, "", " ", "bob", "alice", "%", "%zz", "%00", "a%00b", String(repeating: "x", count: 20_000), "../../etc/passwd", "trip@alice",
        "user:alice", "\"'><img src=x onerror=alert(1)>", "read", "write", "admin", "😀", "\u{0}", "a&b=c", "=", "%E2%28%A1",
    ]

    @Test(arguments: StoreKind.available)
    func hostileFormsAndQueriesNeverFailTheServerOrChangeAnythingUnauthorized(kind: StoreKind) async throws {
        try await SyncServer.with(kind, configure: SyncServer.withAdmin) { server in
            #expect(try await server.admin.send(.POST, "/admin/v1/scopes", json: #"{"scope":"trip@alice","owner":"alice"}"#).status == 201)
            let port = try #require(server.adminPort)
            let operator_ = ConsoleBrowser(port: port)
            #expect(try await operator_.signIn(token: AdminClient.token).status == 303)
            let session = try #require(operator_.cookies[Console.cookie])
            try await operator_.get("/console")
            let csrf = try #require(operator_.csrf)
            let anonymous = ConsoleBrowser(port: port)
            var generator = Generator(state: Self.seed)
            let forms = ["/console/scopes/trip%40alice/members", "/console/scopes/trip%40alice/members/remove", "/console/logout", "/console/login"]
            let pages = ["/console", "/console/users", "/console/users/", "/console/scopes", "/console/scopes/", "/console/rows", "/console/conflicts"]
            let queryNames = ["scope", "table", "row", "after", "user", "kind", "done"]
            var statuses: [Int: Int] = [:]
            print("console fuzz (\(kind)): seed \(Self.seed) (FERRY_FUZZ_SEED=\(Self.seed) replays it), \(Self.rounds) probes")

            for _ in 0..<Self.rounds {
                let members = try await server.store.scope("trip@alice")?.members
                let page: ConsoleBrowser.Page
                var mayChange = false
                switch generator.next(3) {
                case 0:
                    // A form: who sends it, with which token, with which fields.
                    let path = generator.pick(forms)
                    let sender = generator.next(4)
                    var token = [csrf, "", "forged-\(generator.next(1000))", csrf + "x"][generator.next(4)]
                    // Signing the operator out would end the run's session: that form is sent forged only.
                    if path == "/console/logout", sender == 0, token == csrf { token = "" }
                    var fields: [(String, String)] = []
                    for _ in 0..<generator.next(5) {
                        fields.append((generator.pick(["user", "role", "token", "csrf", Self.payload, "%"]), generator.pick(Self.hostileValues)))
                    }
                    let body = (token.isEmpty ? [] : [("csrf", token)]) + fields
                    let raw = generator.next(10) == 0
                    let cookie: String? = ["\(Console.cookie)=\(session)", nil, "\(Console.cookie)=garbage!%", String(repeating: "a", count: 5000)][sender]
                    page = try await Self.send(
                        port: port, .POST, path: path, body: raw ? generator.pick(Self.hostileValues) : Self.encode(body), cookie: cookie,
                        contentType: generator.next(8) == 0 ? "text/plain" : "application/x-www-form-urlencoded")
                    mayChange = sender == 0 && token == csrf
                case 1:
                    var path = generator.pick(pages)
                    if path.hasSuffix("/") { path += Self.encode([("", generator.pick(Self.hostileValues))]).dropFirst() }
                    let query = (0..<generator.next(4)).map { _ in
                        Self.encode([(generator.pick(queryNames), generator.pick(Self.hostileValues))])
                    }.joined(separator: "&")
                    let cookie = generator.next(3) == 0 ? nil : "\(Console.cookie)=\(session)"
                    page = try await Self.send(port: port, .GET, path: query.isEmpty ? path : path + "?" + query, body: nil, cookie: cookie, contentType: nil)
                default:
                    page = try await anonymous.get(generator.pick(pages) + "?" + Self.encode([("scope", Self.payload)]))
                    #expect(page.status == 303 && page.location == "/console/login")
                }
                statuses[page.status, default: 0] += 1
                #expect(page.status < 500, "\(page.status): \(page.text.prefix(300))")
                #expect(!page.text.contains(Self.payload) && !page.text.contains("<img src=x"), "markup served back: \(page.text.prefix(500))")
                if !mayChange {
                    #expect(try await server.store.scope("trip@alice")?.members == members, "a refused form changed the members")
                }
            }
            print("console fuzz (\(kind)): statuses \(statuses.sorted { $0.key < $1.key })")
            #expect(try await operator_.get("/console").status == 200)
            // No one became the owner's peer through a hostile form: members are ordinary users only.
            for member in try await server.store.scope("trip@alice")?.members ?? [] {
                #expect(ScopeName.isValidUserID(member.userID) && member.userID != "alice")
            }
        }
    }

    static func encode(_ fields: [(String, String)]) -> String {
        fields.map { "\(ConsoleBrowser.encode($0.0))=\(ConsoleBrowser.encode($0.1))" }.joined(separator: "&")
    }

    private static let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))

    /// One request exactly as given: this cookie, this content type, this body.
    static func send(port: Int, _ method: HTTPMethod, path: String, body: String?, cookie: String?, contentType: String?) async throws
        -> ConsoleBrowser.Page
    {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)" + path)
        request.method = method
        if let cookie { request.headers.add(name: "Cookie", value: cookie) }
        if let contentType { request.headers.add(name: "Content-Type", value: contentType) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await client.execute(request, timeout: .seconds(30))
        let text = String(buffer: try await response.body.collect(upTo: 16 << 20))
        return ConsoleBrowser.Page(status: Int(response.status.code), headers: response.headers, text: text)
    }
}
