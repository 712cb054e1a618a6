import AsyncHTTPClient
import FerryProtocol
import Foundation
import JWTKit
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat

/// The identity provider's public keys, from its JWKS documents: fetched at
/// start, kept, refreshed at the documents' cache lifetime, and fetched again
/// at once (at most every ``IdentityProviderConfiguration/minimumRefetchInterval``)
/// when a token names a key not held, so a rotation needs no restart. When a
/// fetch fails, the keys held keep working; the failure is logged and
/// counted (`ferry_jwks_fetch_failures_total`).
///
/// ```swift
/// let keys = IdentityProviderKeys(configuration: provider)
/// await keys.load()
/// let verified = try await keys.user(fromToken: token)   // its user, expiry and granted roles
/// ```
public final class IdentityProviderKeys: Sendable {
    /// Algorithms an identity provider's token may use. HMAC and `none`
    /// never: a provider's keys are public.
    static let algorithms: Set<String> = ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"]

    private struct Held: Sendable {
        var collection = JWTKeyCollection()
        /// Each key's one algorithm, by `kid`: a token's header must name it.
        var algorithms: [String: String] = [:]
        var count: Int { algorithms.count }
    }

    private struct State: Sendable {
        var held = Held()
        var lastFetch: ContinuousClock.Instant?
        var cacheLifetime: Duration
    }

    let configuration: IdentityProviderConfiguration
    private let metrics: ServerMetrics
    private let logger: Logger
    private let state: NIOLockedValueBox<State>

    public init(
        configuration: IdentityProviderConfiguration, metrics: ServerMetrics = ServerMetrics(),
        logger: Logger = Logger(label: "ferry-server.jwks")
    ) {
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        state = NIOLockedValueBox(State(cacheLifetime: configuration.defaultCacheLifetime))
    }

    /// How long until the keys should be fetched again.
    var cacheLifetime: Duration { state.withLockedValue { $0.cacheLifetime } }

    /// The user a token names, and when the token expires.
    ///
    /// - Throws: ``FerryServerError`` `unauthorized`, saying why.
    public func user(fromToken token: String, now: Date = Date()) async throws(FerryServerError) -> VerifiedToken {
        let header = try TokenHeader(of: token)
        guard let algorithm = header.alg, Self.algorithms.contains(algorithm) else {
            throw FerryServerError(.unauthorized, "the token's algorithm is not one this server accepts from an identity provider")
        }
        var held = state.withLockedValue { $0.held }
        if let kid = header.kid, held.algorithms[kid] == nil {
            // A key the server does not hold: the provider may have rotated.
            if await refetchIfAllowed() { held = state.withLockedValue { $0.held } }
            guard held.algorithms[kid] != nil else {
                throw FerryServerError(.unauthorized, "the token is signed with a key this server does not know")
            }
        } else if header.kid == nil, held.count != 1 {
            throw FerryServerError(.unauthorized, "the token names no key (`kid`), and the identity provider publishes several")
        }
        // The key's own algorithm, never one the token picks.
        guard held.algorithms[header.kid ?? held.algorithms.keys.first ?? ""] == algorithm else {
            throw FerryServerError(.unauthorized, "the token's algorithm is not its key's")
        }
        let claims: IdentityClaims
        do {
            claims = try await held.collection.verify(token, as: IdentityClaims.self)
        } catch {
            throw FerryServerError(.unauthorized, "the token is not valid for this server")
        }
        return try claims.check(configuration, now: now).get()
    }

    // MARK: - Fetching

    /// Reads every document; keys from those that fail are kept from the
    /// previous load. Whether every document was read.
    @discardableResult
    public func load() async -> Bool {
        state.withLockedValue { $0.lastFetch = .now }
        var documents: [(source: String, text: String)] = []
        var complete = true
        var lifetime = configuration.defaultCacheLifetime
        for path in configuration.jwksFiles {
            do {
                documents.append((path, try String(contentsOfFile: path, encoding: .utf8)))
            } catch {
                complete = false
                failed(path, error)
            }
        }
        for url in configuration.jwksURLs {
            do {
                let (text, maxAge) = try await Self.fetch(url)
                documents.append((url.absoluteString, text))
                if let maxAge { lifetime = min(lifetime, max(maxAge, .seconds(60))) }
            } catch {
                complete = false
                failed(url.absoluteString, error)
            }
        }
        var held = Held()
        for (source, document) in documents {
            // A document with no usable key (an error page, an empty set) is a failed read, not "no keys".
            guard await Self.add(document, to: &held, logger: logger) > 0 else {
                complete = false
                failed(source, FerryServerError(.unavailable, "the document holds no key that can verify tokens"))
                continue
            }
        }
        guard held.count > 0 else { return false }
        // A partial read must not drop keys a failed document holds.
        guard complete || held.count >= state.withLockedValue({ $0.held.count }) else { return false }
        state.withLockedValue {
            $0.held = held
            $0.cacheLifetime = lifetime
        }
        logger.info("identity provider keys loaded", metadata: ["keys": "\(held.count)"])
        return complete
    }

    /// Fetches again when the last fetch is older than the minimum interval.
    private func refetchIfAllowed() async -> Bool {
        let allowed = state.withLockedValue { state -> Bool in
            if let last = state.lastFetch, ContinuousClock.now - last < configuration.minimumRefetchInterval { return false }
            state.lastFetch = .now
            return true
        }
        guard allowed else { return false }
        return await load()
    }

    private func failed(_ source: String, _ error: any Error) {
        metrics.recordJWKSFetchFailure()
        logger.warning("cannot read the identity provider's keys; the keys held keep working", metadata: ["source": "\(source)", "error": "\(error)"])
    }

    /// Adds the document's usable keys, each pinned to one algorithm (its
    /// `alg`, else the one its type and curve imply); how many.
    private static func add(_ document: String, to held: inout Held, logger: Logger) async -> Int {
        guard let jwks = try? JSONDecoder().decode(JWKS.self, from: Data(document.utf8)) else { return 0 }
        var added = 0
        for var jwk in jwks.keys {
            if jwk.keyIdentifier == nil { jwk.keyIdentifier = JWKIdentifier(string: "ferry-unnamed-\(held.count + 1)") }
            guard let algorithm = jwk.algorithm ?? impliedAlgorithm(of: jwk), Self.algorithms.contains(algorithm.rawValue) else {
                logger.warning("a key of the identity provider names no algorithm this server accepts; skipped")
                continue
            }
            jwk.algorithm = algorithm
            do {
                try await held.collection.add(jwk: jwk)
                held.algorithms[jwk.keyIdentifier!.string] = algorithm.rawValue
                added += 1
            } catch {
                logger.warning("a key of the identity provider cannot verify tokens; skipped", metadata: ["error": "\(error)"])
            }
        }
        return added
    }

    /// The algorithm a key without `alg` is used with: RS256 for RSA (the
    /// common default, as OpenID Connect's), the curve's for EC and OKP.
    private static func impliedAlgorithm(of jwk: JWK) -> JWK.Algorithm? {
        switch jwk.keyType {
        case .rsa: return .rs256
        case .ecdsa:
            switch jwk.curve?.rawValue {
            case "P-256": return .es256
            case "P-384": return .es384
            default: return nil
            }
        case .octetKeyPair: return jwk.curve?.rawValue == "Ed25519" ? .eddsa : nil
        default: return nil
        }
    }

    private static func fetch(_ url: URL) async throws -> (String, Duration?) {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.headers.add(name: "Accept", value: "application/json")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        guard response.status == .ok else { throw FerryServerError(.unavailable, "the JWKS URL answered \(response.status.code)") }
        let body = try await response.body.collect(upTo: 1 << 20)
        let maxAge = response.headers["Cache-Control"].lazy.flatMap { $0.split(separator: ",") }
            .compactMap { part -> Duration? in
                let directive = part.trimmingCharacters(in: .whitespaces)
                guard directive.lowercased().hasPrefix("max-age="), let seconds = Int(directive.dropFirst(8)) else { return nil }
                return .seconds(seconds)
            }.first
        return (String(buffer: body), maxAge)
    }
}
