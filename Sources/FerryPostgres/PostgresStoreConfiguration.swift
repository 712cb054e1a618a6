import FerryServer
import Foundation

/// Where the PostgreSQL store connects and how it behaves.
///
/// ```swift
/// var configuration = try PostgresStoreConfiguration(url: "postgres://ferry:secret@db.internal:5432/ferry")
/// configuration.poolSize = 40
/// let store = PostgresSyncStore(configuration: configuration)
/// ```
public struct PostgresStoreConfiguration: Sendable, Hashable {
    /// How the connection uses TLS, as libpq's `sslmode` names it.
    public enum TLSMode: String, Sendable, Hashable {
        /// Plain TCP.
        case disable
        /// TLS when the server offers it (the default, as in libpq).
        case prefer
        /// TLS or no connection.
        case require
    }

    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode
    /// The most connections one server instance opens (besides the one that
    /// listens for notifications).
    public var poolSize = 20
    /// How long a request waits for a connection before it is answered 503.
    public var connectionTimeout: Duration = .seconds(5)
    /// The most row bytes one pull returns per scope; a bigger page is cut and `hasMore` set.
    public var maxPageBytes = 8 << 20
    /// The longest one SQL statement may run (PostgreSQL's `statement_timeout`):
    /// a stuck request answers 503 instead of holding its connection.
    public var statementTimeout: Duration = .seconds(30)
    /// The longest a statement waits for a lock (PostgreSQL's `lock_timeout`),
    /// so a request behind a lock someone forgot answers 503 instead of hanging.
    public var lockTimeout: Duration = .seconds(10)

    public init(host: String, port: Int = 5432, username: String, password: String? = nil, database: String, tls: TLSMode = .prefer) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
    }

    /// Parses a libpq-style URL: `postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require]`.
    ///
    /// - Throws: `FerryServerError` `badRequest` naming what is missing or wrong.
    public init(url text: String) throws {
        guard let components = URLComponents(string: text),
            let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme)
        else {
            throw FerryServerError(.badRequest, "`\(Self.redacted(text))` is not a PostgreSQL URL; write postgres://user:password@host:5432/database")
        }
        guard let host = components.host, !host.isEmpty else {
            throw FerryServerError(.badRequest, "the PostgreSQL URL `\(Self.redacted(text))` names no host")
        }
        guard let user = components.user, !user.isEmpty else {
            throw FerryServerError(.badRequest, "the PostgreSQL URL `\(Self.redacted(text))` names no user")
        }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else {
            throw FerryServerError(.badRequest, "the PostgreSQL URL `\(Self.redacted(text))` names no database (…/database)")
        }
        var tls = TLSMode.prefer
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let mode = item.value.flatMap(TLSMode.init(rawValue:)) else {
                    throw FerryServerError(.badRequest, "sslmode must be disable, prefer or require; it was `\(item.value ?? "")`")
                }
                tls = mode
            default:
                throw FerryServerError(.badRequest, "the PostgreSQL URL option `\(item.name)` is not supported (only sslmode is)")
            }
        }
        self.init(
            host: host,
            port: components.port ?? 5432,
            username: user.removingPercentEncoding ?? user,
            password: components.password.map { $0.removingPercentEncoding ?? $0 },
            database: database.removingPercentEncoding ?? database,
            tls: tls
        )
    }

    /// The URL with its password masked, for logs.
    public var redactedURL: String {
        "postgres://\(username)\(password == nil ? "" : ":***")@\(host):\(port)/\(database)?sslmode=\(tls.rawValue)"
    }

    private static func redacted(_ text: String) -> String {
        guard var components = URLComponents(string: text), components.password != nil else { return text }
        components.password = "***"
        return components.string ?? "(unparseable)"
    }
}

extension PostgresStoreConfiguration: CustomStringConvertible, CustomDebugStringConvertible {
    /// Every setting but the password.
    public var description: String { redactedDescription(of: self, hiding: ["password"]) }
    public var debugDescription: String { description }
}
