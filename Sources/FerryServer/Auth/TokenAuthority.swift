import FerryProtocol
import Foundation
import JWTKit

/// Mints and checks the bearer tokens of the API: the server's own HS256
/// JWTs, whose `sub` is the user id and whose `exp` is always checked, and,
/// with ``IdentityProviderKeys``, the app's identity provider's tokens.
///
/// ```swift
/// let authority = await TokenAuthority(secret: secret)
/// let token = try await authority.mint(userID: "alice", lifetime: .seconds(3600))
/// let user = try await authority.userID(fromToken: token)   // "alice"
/// ```
public struct TokenAuthority: Sendable {
    /// The shortest secret accepted, in bytes.
    public static let minimumSecretLength = 32

    private let keys: JWTKeyCollection
    private let verified = VerifiedTokens()
    private let provider: IdentityProviderKeys?

    /// - Precondition: `secret` has at least ``minimumSecretLength`` bytes;
    ///   use ``validate(secret:)`` on input first.
    public init(secret: String, identityProvider: IdentityProviderKeys? = nil) async {
        precondition(secret.utf8.count >= Self.minimumSecretLength, "JWT secret too short")
        provider = identityProvider
        keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
    }

    /// Refuses secrets too short to be safe for HS256.
    public static func validate(secret: String) throws(FerryServerError) {
        guard secret.utf8.count >= minimumSecretLength else {
            throw FerryServerError(
                .badRequest,
                "the JWT secret must be at least \(minimumSecretLength) bytes; use a long random string"
            )
        }
    }

    /// A token for `userID`, valid for `lifetime` from `now`.
    public func mint(userID: String, lifetime: Duration, now: Date = Date()) async throws -> String {
        guard ScopeName.isValidUserID(userID) else {
            throw FerryServerError(
                .badRequest,
                "user id \(String(reflecting: userID)) must be 1–128 letters, digits or `_ . @ + -`"
            )
        }
        let payload = FerryTokenPayload(
            sub: SubjectClaim(value: userID),
            exp: ExpirationClaim(value: now.addingTimeInterval(lifetime.timeInterval)),
            iat: IssuedAtClaim(value: now)
        )
        return try await keys.sign(payload)
    }

    /// The user a token belongs to.
    ///
    /// - Throws: ``FerryServerError`` `unauthorized` when the token is
    ///   malformed, signed with another key, or expired.
    public func userID(fromToken token: String, now: Date = Date()) async throws(FerryServerError) -> String {
        try await verify(token, now: now).userID
    }

    /// The user a token belongs to, and when it expires: everything the
    /// token opened (a live stream) ends then.
    ///
    /// - Throws: ``FerryServerError`` `unauthorized` when the token is
    ///   malformed, signed with another key, or expired.
    public func verify(_ token: String, now: Date = Date()) async throws(FerryServerError) -> VerifiedToken {
        if let entry = verified.entry(of: token, now: now) { return entry }
        if let provider, !Self.isHS256(token) {
            let checked = try await provider.user(fromToken: token, now: now)
            verified.remember(token, checked, now: now)
            return checked
        }
        let payload: FerryTokenPayload
        do {
            payload = try await keys.verify(token, as: FerryTokenPayload.self)
        } catch let error as JWTError where error.errorType == .claimVerificationFailure {
            throw FerryServerError(.unauthorized, "the token has expired; get a new one")
        } catch {
            throw FerryServerError(.unauthorized, "the token is not valid for this server")
        }
        guard payload.exp.value > now else {
            throw FerryServerError(.unauthorized, "the token has expired; get a new one")
        }
        guard ScopeName.isValidUserID(payload.sub.value) else {
            throw FerryServerError(.unauthorized, "the token's subject is not a valid user id")
        }
        let checked = VerifiedToken(userID: payload.sub.value, expires: payload.exp.value)
        verified.remember(token, checked, now: now)
        return checked
    }
}

extension TokenAuthority {
    /// Whether the token's header names HS256, the server's own tokens:
    /// only those are checked against the secret, so a token signed with a
    /// provider's public key as an HMAC secret never verifies.
    static func isHS256(_ token: String) -> Bool {
        (try? TokenHeader(of: token))?.alg == "HS256"
    }
}

struct FerryTokenPayload: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim
    var iat: IssuedAtClaim?

    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
    }
}
