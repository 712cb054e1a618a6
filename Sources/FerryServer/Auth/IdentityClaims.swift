import FerryProtocol
import Foundation
import JWTKit

/// The claims of an identity provider's token, every one kept, so the
/// configured user claim can be any of them.
struct IdentityClaims: JWTPayload {
    enum Value: Codable, Sendable, Equatable {
        case string(String)
        case number(Double)
        case bool(Bool)
        case array([Value])
        case object([String: Value])
        case null

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let flag = try? container.decode(Bool.self) {
                self = .bool(flag)
            } else if let number = try? container.decode(Double.self) {
                self = .number(number)
            } else if let text = try? container.decode(String.self) {
                self = .string(text)
            } else if let items = try? container.decode([Value].self) {
                self = .array(items)
            } else {
                self = .object(try container.decode([String: Value].self))
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let text): try container.encode(text)
            case .number(let number): try container.encode(number)
            case .bool(let flag): try container.encode(flag)
            case .array(let items): try container.encode(items)
            case .object(let members): try container.encode(members)
            case .null: try container.encodeNil()
            }
        }
    }

    var claims: [String: Value]

    init(claims: [String: Value]) {
        self.claims = claims
    }

    init(from decoder: any Decoder) throws {
        claims = try decoder.singleValueContainer().decode([String: Value].self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(claims)
    }

    /// Checked apart, with the configured leeway (``check(_:now:)``).
    func verify(using algorithm: some JWTAlgorithm) async throws {}

    /// The user the claims name, after every check the configuration asks
    /// for; why not otherwise, in words a client may see.
    func check(_ configuration: IdentityProviderConfiguration, now: Date) -> Result<VerifiedToken, FerryServerError> {
        let leeway = configuration.leeway.timeInterval
        func time(_ name: String) -> Date? {
            if case .number(let seconds)? = claims[name] { Date(timeIntervalSince1970: seconds) } else { nil }
        }
        func refuse(_ why: String) -> Result<VerifiedToken, FerryServerError> {
            .failure(FerryServerError(.unauthorized, why))
        }
        guard let expires = time("exp") else { return refuse("the token has no `exp`; tokens must expire") }
        guard expires.addingTimeInterval(leeway) > now else { return refuse("the token has expired; get a new one") }
        if let notBefore = time("nbf"), notBefore.addingTimeInterval(-leeway) > now { return refuse("the token is not valid yet (`nbf`)") }
        if let issuedAt = time("iat"), issuedAt.addingTimeInterval(-leeway) > now { return refuse("the token was issued in the future (`iat`)") }
        if let issuer = configuration.issuer, claims["iss"] != .string(issuer) {
            return refuse("the token's issuer is not the one this server trusts")
        }
        if let audience = configuration.audience {
            let audiences: [Value] =
                switch claims["aud"] {
                case .string?: [claims["aud"]!]
                case .array(let items)?: items
                default: []
                }
            guard audiences.contains(.string(audience)) else { return refuse("the token is not meant for this server (`aud`)") }
        }
        guard case .string(let userID)? = claims[configuration.userClaim], ScopeName.isValidUserID(userID) else {
            return refuse("the token's `\(configuration.userClaim)` claim is not a valid user id")
        }
        // Accepted until `exp` plus the leeway: that is when what it opened ends.
        return .success(VerifiedToken(userID: userID, expires: expires.addingTimeInterval(leeway), grants: grants(configuration.scopesClaim)))
    }

    /// The roles the scopes claim grants, valid entries only.
    func grants(_ claim: String?) -> [String: ScopeRole] {
        guard let claim, case .object(let entries)? = claims[claim] else { return [:] }
        var grants: [String: ScopeRole] = [:]
        for (scope, value) in entries where ScopeName.isValid(scope) && ScopeName.owner(of: scope) == nil {
            switch value {
            case .string("read"): grants[scope] = .read
            case .string("write"), .string("owner"): grants[scope] = .write
            default: continue
            }
        }
        return grants
    }
}

/// What a checked token says: its user, when it expires, and the roles it
/// grants in shared scopes (from an identity provider's scopes claim).
public struct VerifiedToken: Sendable, Hashable {
    public var userID: String
    public var expires: Date
    public var grants: [String: ScopeRole]

    public init(userID: String, expires: Date, grants: [String: ScopeRole] = [:]) {
        self.userID = userID
        self.expires = expires
        self.grants = grants
    }
}
