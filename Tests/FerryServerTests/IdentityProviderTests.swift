import Crypto
import _CryptoExtras
@testable import FerryServer
import FerryProtocol
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import NIOConcurrencyHelpers
import NIOCore
import Testing
import FerryTestSupport

/// Tokens from the app's identity provider, checked against keys a real
/// loopback JWKS server (run by the test, keys generated here) publishes.
@Suite(.serialized) struct IdentityProviderTests {
    static let issuer = "https://id.example.com/"
    static let audience = "ferry-test"

    @Test func rsaEcdsaAndEdDSATokensAreAcceptedAndEveryBadOneIsRefused() async throws {
        let provider = try await Provider()
        try await JWKSServer.run(document: provider.jwks()) { jwks, url in
            let server = try await TestServer { $0.identityProvider = Self.configuration(url) }
            try await server.withClient { client in
                for kid in ["rsa", "ec", "ed"] {
                    let token = try await provider.token(kid: kid, user: "alice-\(kid)")
                    let answer = try await Self.pull(client, token, user: "alice-\(kid)")
                    #expect(answer.status == .ok, "\(kid): \(answer.text)")
                }
                // The server's own tokens still work beside the provider's.
                #expect(try await Self.pull(client, try await server.token("bob"), user: "bob").status == .ok)

                let refused: [(String, String)] = [
                    ("wrong audience", try await provider.token(kid: "rsa", user: "alice", claims: ["aud": .string("other")])),
                    ("wrong issuer", try await provider.token(kid: "ec", user: "alice", claims: ["iss": .string("https://evil.example/")])),
                    ("expired", try await provider.token(kid: "ed", user: "alice", claims: ["exp": .number(Date().timeIntervalSince1970 - 3600)])),
                    ("no exp", try await provider.token(kid: "ed", user: "alice", claims: ["exp": .null])),
                    ("not yet valid", try await provider.token(kid: "ed", user: "alice", claims: ["nbf": .number(Date().timeIntervalSince1970 + 3600)])),
                    ("unknown key", try await Provider().token(kid: "rsa", user: "alice")),
                    ("no kid among several keys", try await provider.token(kid: nil, user: "alice")),
                    ("alg none", Provider.unsigned(user: "alice")),
                    ("HS256 with the public key as secret", try await provider.hmacWithPublicKey(user: "alice")),
                    ("a bad user claim", try await provider.token(kid: "rsa", user: "has space")),
                ]
                for (what, token) in refused {
                    let answer = try await Self.pull(client, token, user: "alice")
                    #expect(answer.status == .unauthorized, "\(what): \(answer.status) \(answer.text)")
                    #expect(try answer.decode(ErrorResponse.self).code == .unauthorized, "\(what)")
                    #expect(answer.headers[.wwwAuthenticate] == #"Bearer error="invalid_token""#, "\(what)")
                    #expect(!answer.text.contains(token), "\(what): the answer echoes the token")
                }
                let anonymous = try await client.send(.post, "/v1/pull", token: nil, json: #"{"clientID":"c1","scopes":[{"scope":"user:a"}]}"#)
                #expect(anonymous.status == .unauthorized && anonymous.headers[.wwwAuthenticate] == "Bearer")
            }
            #expect(jwks.requests >= 1)
        }
    }

    @Test func aRotatedKeyIsPickedUpWithoutARestartAndCachedKeysOutliveTheJWKSServer() async throws {
        let provider = try await Provider()
        try await JWKSServer.run(document: provider.jwks(only: ["rsa"])) { jwks, url in
            let server = try await TestServer { $0.identityProvider = Self.configuration(url) }
            try await server.withClient { client in
                #expect(try await Self.pull(client, try await provider.token(kid: "rsa", user: "alice"), user: "alice").status == .ok)
                // The provider rotates in a new key: the first token naming it fetches the keys again.
                jwks.serve(try provider.jwks(only: ["rsa", "ec"]))
                #expect(try await Self.pull(client, try await provider.token(kid: "ec", user: "alice"), user: "alice").status == .ok)

                // A JWKS answer with no usable key (an error page) is a failed read: the keys held stay.
                jwks.serve("<html>maintenance</html>")
                #expect(try await Self.pull(client, try await provider.token(kid: "ed", user: "alice"), user: "alice").status == .unauthorized)
                #expect(try await Self.pull(client, try await provider.token(kid: "rsa", user: "dave"), user: "dave").status == .ok)

                // The JWKS server goes down: the keys held keep working, a new key cannot be learned, and /metrics counts the failure.
                jwks.goDown()
                let fresh = try await provider.token(kid: "rsa", user: "carol")
                #expect(try await Self.pull(client, fresh, user: "carol").status == .ok)
                #expect(try await Self.pull(client, try await provider.token(kid: "ed", user: "carol"), user: "carol").status == .unauthorized)
                let metrics = try await client.send(.get, "/metrics", token: nil)
                #expect(metrics.text.contains("ferry_jwks_fetch_failures_total 2"), "\(metrics.text.split(separator: "\n").filter { $0.contains("jwks") })")
            }
        }
    }

    @Test func theUserClaimAndLeewayAreTheConfigurations() async throws {
        let provider = try await Provider()
        try await JWKSServer.run(document: provider.jwks(only: ["ed"])) { _, url in
            let server = try await TestServer {
                var configuration = Self.configuration(url)
                configuration.userClaim = "uid"
                configuration.leeway = .seconds(30)
                $0.identityProvider = configuration
            }
            try await server.withClient { client in
                // With one key, a token may name none.
                let justExpired = try await provider.token(
                    kid: nil, user: "ignored", claims: ["uid": .string("dana"), "exp": .number(Date().timeIntervalSince1970 - 10)])
                #expect(try await Self.pull(client, justExpired, user: "dana").status == .ok)
                let longExpired = try await provider.token(
                    kid: "ed", user: "ignored", claims: ["uid": .string("dana"), "exp": .number(Date().timeIntervalSince1970 - 60)])
                #expect(try await Self.pull(client, longExpired, user: "dana").status == .unauthorized)
                #expect(try await Self.pull(client, try await provider.token(kid: "ed", user: "dana"), user: "dana").status == .unauthorized)
            }
        }
    }

    @Test func theScopesClaimGrantsRolesForAsLongAsTheTokenLives() async throws {
        let provider = try await Provider()
        try await JWKSServer.run(document: provider.jwks(only: ["rsa"])) { _, url in
            let server = try await TestServer {
                var configuration = Self.configuration(url)
                configuration.scopesClaim = "ferry_scopes"
                $0.identityProvider = configuration
            }
            let grants: IdentityClaims.Value = .object([
                "team:field@olga": .string("owner"), "team:view@olga": .string("read"),
                "user:bob": .string("write"), "bad name": .string("write"), "team:odd@olga": .string("admin"),
            ])
            try await server.withClient { client in
                let token = try await provider.token(kid: "rsa", user: "rita", claims: ["ferry_scopes": grants])
                func push(_ scope: String, _ token: String) async throws -> HTTPResponse.Status {
                    let body = #"{"clientID":"\#(UUID().uuidString)","mutations":[{"mutationID":1,"table":"note","rowID":"r1","scope":"\#(scope)","operation":"upsert","columns":{"t":"x"},"hlc":1}]}"#
                    return try await client.send(.post, "/v1/push", token: token, json: body).status
                }
                func pull(_ scope: String, _ token: String) async throws -> HTTPResponse.Status {
                    try await client.send(.post, "/v1/pull", token: token, json: #"{"clientID":"c1","scopes":[{"scope":"\#(scope)"}]}"#).status
                }
                #expect(try await push("team:field@olga", token) == .ok)
                #expect(try await pull("team:view@olga", token) == .ok)
                #expect(try await push("team:view@olga", token) == .forbidden)
                #expect(try await pull("user:bob", token) == .forbidden)
                #expect(try await pull("team:odd@olga", token) == .forbidden)
                let listed = try await client.send(.get, "/v1/scopes", token: token).decode(ScopeList.self).scopes
                #expect(listed.map(\.scope) == ["user:rita", "team:field@olga", "team:view@olga"])
                #expect(listed.map(\.role) == [.write, .write, .read])

                // The grant is the token's: a token without it, or one that has expired, grants nothing.
                let plain = try await provider.token(kid: "rsa", user: "rita")
                #expect(try await push("team:field@olga", plain) == .forbidden)
                let expired = try await provider.token(
                    kid: "rsa", user: "rita", claims: ["ferry_scopes": grants, "exp": .number(Date().timeIntervalSince1970 - 3600)])
                #expect(try await pull("team:field@olga", expired) == .unauthorized)
            }
        }
    }

    /// A key published without `alg` is pinned to the one its type implies
    /// (RS256 for RSA): a token naming another algorithm for it is refused
    /// and changes nothing for the tokens that follow.
    @Test func aKeyWithoutAlgIsPinnedToOneAlgorithm() async throws {
        let provider = try await Provider()
        let (modulus, exponent) = try Insecure.RSA.PublicKey(backing: provider.rsa.publicKey).getKeyPrimitives()
        let bare = JWKS(keys: [.rsa(nil, identifier: "rsa", modulus: Provider.base64URL(modulus), exponent: Provider.base64URL(exponent))])
        let document = String(decoding: try JSONEncoder().encode(bare), as: UTF8.self)
        try await JWKSServer.run(document: document) { _, url in
            let server = try await TestServer { $0.identityProvider = Self.configuration(url) }
            try await server.withClient { client in
                let good = try await provider.token(kid: "rsa", user: "alice")
                let parts = good.split(separator: ".")
                let header = Provider.base64URL(Data(#"{"alg":"RS512","kid":"rsa","typ":"JWT"}"#.utf8))
                let forged = header + "." + parts[1] + "." + parts[2]
                #expect(try await Self.pull(client, forged, user: "alice").status == .unauthorized)
                #expect(try await Self.pull(client, good, user: "alice").status == .ok)
            }
        }
    }

    @Test func aConfigurationThatWouldTrustOtherAppsTokensIsRefused() throws {
        var configuration = Self.configuration(URL(string: "https://id.example.com/jwks.json")!)
        #expect(throws: Never.self) { try configuration.validate() }
        configuration.audience = nil
        #expect(throws: FerryServerError.self) { try configuration.validate() }
        configuration = Self.configuration(URL(string: "http://id.example.com/jwks.json")!)
        #expect(throws: FerryServerError.self) { try configuration.validate() }
        configuration = Self.configuration(URL(string: "http://localhost:8000/jwks.json")!)
        #expect(throws: Never.self) { try configuration.validate() }
    }

    // MARK: - Support

    static func configuration(_ url: URL) -> IdentityProviderConfiguration {
        var configuration = IdentityProviderConfiguration()
        configuration.jwksURLs = [url]
        configuration.issuer = issuer
        configuration.audience = audience
        configuration.minimumRefetchInterval = .zero
        return configuration
    }

    static func pull(_ client: any TestClientProtocol, _ token: String, user: String) async throws -> TestResponse {
        try await client.send(.post, "/v1/pull", token: token, json: #"{"clientID":"c1","scopes":[{"scope":"user:\#(user)"}]}"#)
    }

    /// An identity provider: an RSA, an EC (P-256) and an Ed25519 key.
    struct Provider {
        let rsa: _RSA.Signing.PrivateKey
        let ec = P256.Signing.PrivateKey()
        let ed = Curve25519.Signing.PrivateKey()
        let signers = JWTKeyCollection()

        init() async throws {
            rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            await signers.add(rsa: try Insecure.RSA.PrivateKey(backing: rsa), digestAlgorithm: .sha256, kid: "rsa")
            await signers.add(ecdsa: try ES256PrivateKey(backing: ec), kid: "ec")
            await signers.add(eddsa: EdDSA.PrivateKey(backing: ed), kid: "ed")
        }

        func jwks(only kids: Set<String> = ["rsa", "ec", "ed"]) throws -> String {
            let (modulus, exponent) = try Insecure.RSA.PublicKey(backing: rsa.publicKey).getKeyPrimitives()
            let point = ec.publicKey.rawRepresentation
            let keys: [(String, JWK)] = [
                ("rsa", .rsa(.rs256, identifier: "rsa", modulus: Self.base64URL(modulus), exponent: Self.base64URL(exponent))),
                ("ec", .ecdsa(.es256, identifier: "ec", x: Self.base64URL(point.prefix(32)), y: Self.base64URL(point.suffix(32)), curve: .p256)),
                ("ed", .octetKeyPair(.eddsa, identifier: "ed", x: Self.base64URL(ed.publicKey.rawRepresentation), y: nil, curve: .ed25519)),
            ]
            return String(decoding: try JSONEncoder().encode(JWKS(keys: keys.filter { kids.contains($0.0) }.map(\.1))), as: UTF8.self)
        }

        func token(kid: String?, user: String, claims extra: [String: IdentityClaims.Value] = [:]) async throws -> String {
            let now = Date().timeIntervalSince1970
            var claims: [String: IdentityClaims.Value] = [
                "sub": .string(user), "iss": .string(IdentityProviderTests.issuer), "aud": .array([.string(IdentityProviderTests.audience)]),
                "exp": .number(now + 600), "iat": .number(now),
            ]
            for (name, value) in extra {
                if value == .null { claims.removeValue(forKey: name) } else { claims[name] = value }
            }
            let signer = kid ?? "ed"
            var header = JWTHeader()
            header.kid = nil
            let token = try await signers.sign(IdentityClaims(claims: claims), kid: JWKIdentifier(string: signer), header: header)
            guard kid == nil else { return token }
            // The same token with no `kid` in its header.
            let parts = token.split(separator: ".")
            let noKid = Self.base64URL(Data(#"{"alg":"EdDSA","typ":"JWT"}"#.utf8))
            let signingInput = noKid + "." + parts[1]
            let signature = try ed.signature(for: Data(signingInput.utf8))
            return signingInput + "." + Self.base64URL(signature)
        }

        /// The classic confusion: HS256 keyed with the provider's public key.
        func hmacWithPublicKey(user: String) async throws -> String {
            let secret = try Insecure.RSA.PublicKey(backing: rsa.publicKey).getKeyPrimitives().modulus
            let header = Self.base64URL(Data(#"{"alg":"HS256","kid":"rsa","typ":"JWT"}"#.utf8))
            let payload = Self.base64URL(
                Data(#"{"sub":"\#(user)","exp":\#(Int(Date().timeIntervalSince1970) + 600),"iss":"\#(IdentityProviderTests.issuer)","aud":"\#(IdentityProviderTests.audience)"}"#.utf8))
            let mac = HMAC<SHA256>.authenticationCode(for: Data((header + "." + payload).utf8), using: SymmetricKey(data: secret))
            return header + "." + payload + "." + Self.base64URL(Data(mac))
        }

        static func unsigned(user: String) -> String {
            let header = base64URL(Data(#"{"alg":"none","kid":"rsa"}"#.utf8))
            let payload = base64URL(Data(#"{"sub":"\#(user)","exp":\#(Int(Date().timeIntervalSince1970) + 600)}"#.utf8))
            return header + "." + payload + "."
        }

        static func base64URL(_ data: some DataProtocol) -> String {
            Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
    }
}

/// A JWKS document on a real loopback socket: what it serves can change
/// (a rotation), and it can go down.
final class JWKSServer: Sendable {
    private struct State {
        var document: String
        var down = false
        var requests = 0
    }

    private let state: NIOLockedValueBox<State>

    private init(document: String) {
        state = NIOLockedValueBox(State(document: document))
    }

    var requests: Int { state.withLockedValue { $0.requests } }
    func serve(_ document: String) { state.withLockedValue { $0.document = document } }
    func goDown() { state.withLockedValue { $0.down = true } }

    static func run(document: String, _ body: (JWKSServer, URL) async throws -> Void) async throws {
        let server = JWKSServer(document: document)
        let router = Router()
        router.get("/jwks.json") { _, _ -> Response in
            let (document, down) = server.state.withLockedValue { state in
                state.requests += 1
                return (state.document, state.down)
            }
            guard !down else { return Response(status: .serviceUnavailable) }
            return Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "max-age=300"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: document)))
        }
        let (ports, port) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in port.yield(channel.localAddress?.port ?? 0) })
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService() }
            var iterator = ports.makeAsyncIterator()
            let bound = await iterator.next() ?? 0
            do {
                try await body(server, URL(string: "http://127.0.0.1:\(bound)/jwks.json")!)
            } catch {
                group.cancelAll()
                throw error
            }
            group.cancelAll()
        }
    }
}

/// `ferry-server serve --jwks-file`, as an operator of an air-gapped
/// deployment runs it: the real process takes the provider's tokens.
@Suite struct IdentityProviderCommandTests {
    @Test func serveTakesAProvidersTokensFromAJWKSFile() async throws {
        let provider = try await IdentityProviderTests.Provider()
        let directory = try TemporaryDirectory()
        let keys = directory.path("jwks.json")
        try provider.jwks().write(toFile: keys, atomically: true, encoding: .utf8)
        let server = try ServerProcess([
            "serve", "--port", "0", "--data-dir", directory.path("data"), "--jwt-secret", TestServer.secret,
            "--jwks-file", keys, "--issuer", IdentityProviderTests.issuer, "--audience", IdentityProviderTests.audience,
        ])
        defer { server.stop() }
        let line = try await server.waitForLine(startingWith: "Ferry server listening on http://127.0.0.1:")
        let port = try FerryServerCommandTests.port(from: line)
        let pull = #"{"clientID":"c1","scopes":[{"scope":"user:erin"}]}"#
        let accepted = try await EventStreamClient.request(
            port: port, method: "POST", path: "/v1/pull", token: try await provider.token(kid: "ec", user: "erin"), body: pull)
        #expect(accepted.status.contains(" 200 "), "\(accepted)")
        let refused = try await EventStreamClient.request(
            port: port, method: "POST", path: "/v1/pull",
            token: try await provider.token(kid: "ec", user: "erin", claims: ["aud": .string("another-app")]), body: pull)
        #expect(refused.status.contains(" 401 "), "\(refused)")

        let bad = try ServerProcess.run(["serve", "--data-dir", directory.path("other"), "--issuer", "x"])
        #expect(bad.status != 0 && bad.output.contains("--jwks-url or --jwks-file"), "\(bad.output)")
    }
}
