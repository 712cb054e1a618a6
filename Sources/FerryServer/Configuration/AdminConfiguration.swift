import Foundation

/// The admin API's own listener: the app's backend reads and writes synced
/// data there, with a credential that is not a user token.
///
/// ```swift
/// var configuration = FerryServerConfiguration(jwtSecret: secret)
/// configuration.admin = try AdminConfiguration(port: 8081, tokenFile: URL(filePath: "/etc/ferry/admin-token"))
/// ```
public struct AdminConfiguration: Sendable {
    /// The address to listen on; loopback by default, so only the machine's
    /// own processes (or a tunnel) reach it.
    public var host = "127.0.0.1"
    /// The port; `0` picks a free one.
    public var port: Int
    /// The credential: `Authorization: Bearer <token>`, and the password of
    /// the console (`/console` on this port).
    public var token: String
    /// How long a console session lasts without a request; it also ends
    /// 12 hours after sign-in however busy, and at a restart.
    public var consoleSessionTimeout: Duration = .seconds(30 * 60)

    /// The fewest characters an admin token may have.
    public static let minimumTokenLength = 32

    public init(port: Int, token: String) throws {
        guard token.count >= Self.minimumTokenLength, token.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
            throw FerryServerError(
                .badRequest,
                "the admin token must be at least \(Self.minimumTokenLength) printable ASCII characters without spaces (try `openssl rand -hex 32`)")
        }
        self.port = port
        self.token = token
    }

    /// Reads the token from a file (surrounding whitespace ignored), so it
    /// stays out of the process list.
    public init(port: Int, tokenFile: URL) throws {
        let text: String
        do {
            text = try String(contentsOf: tokenFile, encoding: .utf8)
        } catch {
            throw FerryServerError(.badRequest, "cannot read the admin token file \(tokenFile.path): \(error.localizedDescription)")
        }
        try self.init(port: port, token: text.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// A receiver of row changes: batches from the change feed, POSTed and
/// signed (see `WebhookDelivery`).
///
/// ```swift
/// var hook = try WebhookConfiguration(name: "notify", url: URL(string: "https://api.example.com/ferry")!, secret: secret)
/// hook.scope = "family@alice"
/// configuration.webhooks.append(hook)
/// ```
public struct WebhookConfiguration: Sendable {
    /// Names the webhook in the admin API, in metrics, and in the store,
    /// which keeps its delivery cursor under this name.
    public var name: String
    public var url: URL
    /// Signs each batch: HMAC-SHA256 over `"<t>.<body>"`.
    public var secret: String
    /// Only this scope's changes; `nil` for every scope.
    public var scope: String?
    /// Only this table's changes; `nil` for every table.
    public var table: String?
    /// The most changes in one batch.
    public var batchSize = 100
    /// Failed attempts in a row after which the webhook is parked.
    public var maxFailures = 10
    /// The wait after the first failure; it doubles with each, up to ``maxBackoff``.
    public var initialBackoff: Duration = .milliseconds(500)
    public var maxBackoff: Duration = .seconds(60)
    /// How long one POST may take.
    public var timeout: Duration = .seconds(10)

    public init(name: String, url: URL, secret: String) throws {
        guard name.utf8.count <= 64, !name.isEmpty,
            name.utf8.allSatisfy({ $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") })
        else {
            throw FerryServerError(.badRequest, "webhook name \(MutationCheck.quoted(name)) must be 1–64 of A–Z a–z 0–9 _ . -")
        }
        guard let scheme = url.scheme?.lowercased(), scheme == "https" || (scheme == "http" && IdentityProviderConfiguration.isLoopback(url)) else {
            throw FerryServerError(.badRequest, "webhook `\(name)`: \(url.absoluteString) must be https (http only on loopback)")
        }
        guard secret.utf8.count >= 16 else {
            throw FerryServerError(.badRequest, "webhook `\(name)`: the secret must be at least 16 bytes")
        }
        self.name = name
        self.url = url
        self.secret = secret
    }
}

extension UInt8 {
    fileprivate var isASCIIAlphanumeric: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }
}
