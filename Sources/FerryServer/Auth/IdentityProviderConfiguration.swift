import Foundation

/// Tokens from the app's own identity provider (Auth0, Firebase Auth,
/// Supabase, Keycloak, Cognito, an app backend): JWTs signed with the
/// provider's keys, published as a JWKS document.
///
/// The server's own HS256 tokens (`ferry-server token`) keep working beside
/// them, for development and operators.
///
/// ```swift
/// var configuration = FerryServerConfiguration(jwtSecret: secret)
/// var provider = IdentityProviderConfiguration()
/// provider.jwksURLs = [URL(string: "https://example.eu.auth0.com/.well-known/jwks.json")!]
/// provider.issuer = "https://example.eu.auth0.com/"
/// provider.audience = "https://sync.example.com"
/// configuration.identityProvider = provider
/// ```
public struct IdentityProviderConfiguration: Sendable, Hashable {
    /// Where the provider publishes its keys; fetched at start, refreshed
    /// at the document's cache lifetime, and at once (rate-limited) when a
    /// token names a key the server does not hold.
    public var jwksURLs: [URL] = []
    /// JWKS documents on disk, for deployments that cannot reach the
    /// provider; read at start.
    public var jwksFiles: [String] = []
    /// The `iss` every token must carry; required (``validate()``).
    public var issuer: String?
    /// A value the token's `aud` must hold; required (``validate()``).
    public var audience: String?
    /// The claim that holds the user id.
    public var userClaim = "sub"
    /// A claim holding `{"<scope>": "read" | "write" | "owner"}`: the token
    /// grants those roles in those shared scopes for as long as it lives,
    /// beside the memberships the server stores (`owner` reads and writes).
    /// Personal scopes (`user:…`) are never granted; entries that name no
    /// valid scope or role are ignored.
    public var scopesClaim: String?
    /// How far clocks may disagree when `exp`, `nbf` and `iat` are checked.
    public var leeway: Duration = .seconds(60)
    /// The least time between two fetches of the documents for a token that
    /// names an unknown key.
    public var minimumRefetchInterval: Duration = .seconds(5)
    /// How long fetched keys are kept when the document gives no
    /// `Cache-Control: max-age`.
    public var defaultCacheLifetime: Duration = .seconds(3600)

    public init() {}

    /// Whether any keys are configured.
    public var isConfigured: Bool { !jwksURLs.isEmpty || !jwksFiles.isEmpty }

    /// Refuses a configuration that would accept tokens not meant for this
    /// server: the issuer and audience are required (one provider's keys
    /// often sign for many apps: every Firebase project, an Auth0 tenant's
    /// every API), and keys are fetched over HTTPS only, but from loopback.
    public func validate() throws(FerryServerError) {
        guard isConfigured else {
            throw FerryServerError(.badRequest, "name the identity provider's keys: a JWKS URL or a JWKS file")
        }
        guard let issuer, !issuer.isEmpty, let audience, !audience.isEmpty else {
            throw FerryServerError(
                .badRequest,
                "an identity provider's tokens need an issuer and an audience to check (--issuer, --audience): its keys may sign tokens for other apps too")
        }
        for url in jwksURLs {
            guard url.scheme?.lowercased() == "https" || (url.scheme?.lowercased() == "http" && Self.isLoopback(url)) else {
                throw FerryServerError(.badRequest, "the JWKS URL \(url.absoluteString) must be https (plain http only on loopback): whoever could change the keys could sign in as anyone")
            }
        }
    }

    /// Whether `url` names this machine (where plain http is allowed).
    static func isLoopback(_ url: URL) -> Bool {
        let host = url.host?.lowercased() ?? ""
        return host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }
}
