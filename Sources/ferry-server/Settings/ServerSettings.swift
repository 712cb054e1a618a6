import ArgumentParser
import FerryServer
import Foundation

/// Every setting of `ferry-server`, in the order `--help` and the README show them.
///
/// A flag, a `FERRY_*` variable and a key in the `--config` file set each
/// one; flags win over the environment, the environment over the file, the
/// file over the defaults.
///
/// ```swift
/// ServerSettings["connections.idleTimeout"].environment   // "FERRY_CONNECTIONS_IDLE_TIMEOUT"
/// ```
enum ServerSettings {
    private static let defaults = FerryServerConfiguration(jwtSecret: "")

    private static func seconds(_ duration: Duration) -> String {
        let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return value.rounded() == value ? String(Int64(value)) : String(value)
    }

    /// The settings as declared, secrets without their file twins.
    static let declared: [Setting] = [
        // Where and what
        Setting("host", flag: "host", .text, default: defaults.host, "The address to listen on."),
        Setting("port", flag: "port", .integer, default: String(defaults.port), "The port to listen on (0 picks a free one)."),
        Setting(
            "tls.certificate", flag: "tls-cert", .text,
            "Serve TLS (HTTP/2 and HTTP/1.1 by ALPN) with this PEM certificate chain; with tls.key. Read again on SIGHUP."),
        Setting("tls.key", flag: "tls-key", .text, "The PEM private key of tls.certificate. Read again on SIGHUP."),
        Setting("dataDir", flag: "data-dir", .text, default: "./ferry-data", "The data directory: the SQLite store and the generated JWT secret."),
        Setting(
            "jwtSecret", flag: "jwt-secret", .text, secret: true,
            "The HS256 secret for tokens (at least 32 bytes); without it, one generated in the data directory."),
        Setting(
            "postgres.url", flag: "postgres", .text, secret: true,
            "Keep the store in PostgreSQL instead of SQLite: postgres://user:password@host:5432/database[?sslmode=disable|prefer|require]. Many instances may share one database."
        ),
        Setting("postgres.poolSize", flag: "pool-size", .integer, default: "20", "The most PostgreSQL connections this instance opens."),
        Setting(
            "postgres.statementTimeout", flag: "statement-timeout", .seconds, default: "30",
            "Seconds one PostgreSQL statement may run, or wait for a lock, before its request answers 503."),
        Setting(
            "postgres.connectionTimeout", flag: "connection-timeout", .seconds, default: "5",
            "Seconds to wait for a PostgreSQL connection before a request answers 503."),
        Setting(
            "postgres.lockTimeout", flag: "lock-timeout", .seconds, default: "10",
            "Seconds a PostgreSQL statement may wait for a lock (at most the statement timeout) before its request answers 503."),
        Setting(
            "postgres.maxPageBytes", flag: "max-page-bytes", .integer, default: String(8 << 20),
            "The most bytes of rows one pulled page holds on PostgreSQL; a page stops early past it."),
        Setting("log.format", flag: "log-format", .text, default: "text", "How log lines are written to standard error: text, or json (one object a line)."),
        Setting("log.level", flag: "log-level", .text, default: "info", "The least severe log level written: trace, debug, info, notice, warning, error or critical."),
        Setting(
            "otel.endpoint", flag: "otel-endpoint", .text,
            "Export request spans over OTLP/HTTP to this collector (http://host:4318; spans go to its /v1/traces). OTEL_* variables tune the exporter."
        ),
        // Sync rules
        Setting(
            "policies", flag: "policy", .list,
            "A table's conflict policy, as table=policy (lastWriteWins, serverWins, clientWins, manual). Repeatable; other tables use lastWriteWins."),
        Setting("tombstoneRetentionDays", flag: "tombstone-retention-days", .integer, default: "30", "Days a tombstone is kept before garbage collection."),
        Setting(
            "garbageCollectionInterval", flag: "gc-interval", .seconds, default: seconds(defaults.garbageCollectionInterval),
            "Seconds between garbage collections (tombstones, then unreferenced blobs)."),
        Setting(
            "maxClockDrift", flag: "max-clock-drift", .seconds, default: seconds(defaults.maxClockDrift),
            "Seconds a last-write-wins stamp may be ahead of the server's clock."),
        Setting(
            "liveHeartbeat", flag: "live-heartbeat", .seconds, default: seconds(defaults.liveHeartbeat),
            "Seconds between the comments an idle live stream sends, so proxies keep it open."),
        // Connections
        Setting(
            "connections.headerTimeout", flag: "header-timeout", .seconds, default: seconds(defaults.connections.headerReadTimeout),
            "Seconds a request may take to send its headers."),
        Setting(
            "connections.bodyTimeout", flag: "body-timeout", .seconds, default: seconds(defaults.connections.bodyReadTimeout),
            "Seconds a request may take to send its body, after its headers."),
        Setting(
            "connections.idleTimeout", flag: "idle-timeout", .seconds, default: seconds(defaults.connections.idleTimeout),
            "Seconds a kept-alive connection may wait for its next request."),
        Setting(
            "connections.maxConnections", flag: "max-connections", .integer, default: String(defaults.connections.maxConnections),
            "Connections open at once (lowered to fit the open-file limit); more get 503."),
        Setting(
            "connections.maxLiveStreams", flag: "max-live-streams", .integer, default: String(defaults.connections.maxLiveStreamsPerUser),
            "Live streams one user may hold open at once; more get 429."),
        // What one request may carry
        Setting("limits.maxBodyBytes", flag: "max-body-bytes", .integer, default: String(defaults.limits.maxBodyBytes), "The largest request body, in bytes; larger get 413."),
        Setting(
            "limits.maxBlobBytes", flag: "max-blob-bytes", .integer, default: String(defaults.limits.maxBlobBytes),
            "The largest attachment (blob) upload, in bytes; larger ones get 413 before any byte is read."),
        Setting(
            "limits.maxMutationsPerPush", flag: "max-mutations-per-push", .integer, default: String(defaults.limits.maxMutationsPerPush),
            "Mutations one push may carry."),
        Setting(
            "limits.maxColumnsPerMutation", flag: "max-columns-per-mutation", .integer, default: String(defaults.limits.maxColumnsPerMutation),
            "Columns one mutation may set."),
        Setting(
            "limits.maxScopesPerRequest", flag: "max-scopes-per-request", .integer, default: String(defaults.limits.maxScopesPerRequest),
            "Scopes one pull or live stream may name."),
        Setting(
            "limits.defaultPullLimit", flag: "default-pull-limit", .integer, default: String(defaults.limits.defaultPullLimit),
            "Rows in a pulled page when the request names no limit."),
        Setting("limits.maxPullLimit", flag: "max-pull-limit", .integer, default: String(defaults.limits.maxPullLimit), "The most rows a pulled page may hold."),
        // Rate limits
        Setting(
            "rateLimits.pushes", flag: "push-rate", .text, default: defaults.rateLimits.pushes?.description ?? "off",
            "Pushes one user may send: PER_SECOND or PER_SECOND/BURST, or off; more get 429 with Retry-After."),
        Setting(
            "rateLimits.requests", flag: "request-rate", .text, default: defaults.rateLimits.requests?.description ?? "off",
            "Other requests (pulls, reads, blob requests) one user may send: PER_SECOND[/BURST], or off."),
        Setting(
            "rateLimits.blobBytes", flag: "blob-byte-rate", .text, default: defaults.rateLimits.blobBytes?.description ?? "off",
            "Attachment bytes one user may move up and down: PER_SECOND[/BURST], or off."),
        // Stopping
        Setting(
            "shutdownGrace", flag: "shutdown-grace", .seconds, default: seconds(defaults.shutdownGracePeriod),
            "Seconds a stopping server waits for requests in flight and its store before it exits anyway."),
        Setting(
            "drainSeconds", flag: "drain-seconds", .seconds, default: "0",
            "Seconds a stopping server keeps serving with /readyz answering 503, so a load balancer moves traffic away first."),
        // Sign-in with the app's identity provider
        Setting(
            "identityProvider.jwksUrls", flag: "jwks-url", .list,
            "Where the app's identity provider publishes its keys (a JWKS URL); its tokens are accepted beside the server's own. Repeatable."),
        Setting(
            "identityProvider.jwksFiles", flag: "jwks-file", .list,
            "A JWKS document on disk holding the identity provider's keys (for servers that cannot reach it). Repeatable."),
        Setting("identityProvider.issuer", flag: "issuer", .text, "The `iss` an identity provider's token must carry."),
        Setting("identityProvider.audience", flag: "audience", .text, "A value an identity provider's token's `aud` must hold."),
        Setting("identityProvider.userClaim", flag: "user-claim", .text, default: "sub", "The claim of an identity provider's token that holds the user id."),
        Setting(
            "identityProvider.scopesClaim", flag: "scopes-claim", .text,
            "A claim of an identity provider's token holding {\"<scope>\": \"read\"|\"write\"|\"owner\"}: roles in shared scopes granted for as long as the token lives."
        ),
        Setting(
            "identityProvider.tokenLeeway", flag: "token-leeway", .seconds, default: "60",
            "Seconds clocks may disagree when a token's exp, nbf and iat are checked."),
        // The app's backend
        Setting(
            "admin.port", flag: "admin-port", .integer,
            "Serve the admin API (/admin/v1/…) on this port; with it, the admin token is required."),
        Setting(
            "admin.host", flag: "admin-host", .text, default: "127.0.0.1",
            "The address the admin API listens on (loopback by default: only this machine reaches it)."),
        Setting(
            "admin.consoleSessionTimeout", flag: "console-session-timeout", .seconds, default: "1800",
            "Seconds a console session (/console on the admin port) lasts without a request."),
        Setting(
            "admin.token", flag: "admin-token", .text, secret: true,
            "The admin credential (at least 32 characters; `openssl rand -hex 32 > admin-token`)."),
        Setting(
            "webhooks.endpoints", flag: "webhook", .list,
            "A webhook receiving row changes, as name=URL (https, or http on loopback). Repeatable."),
        Setting("webhooks.secret", flag: "webhook-secret", .text, secret: true, "The secret that signs webhook deliveries (at least 16 bytes)."),
        Setting("webhooks.scopes", flag: "webhook-scope", .list, "Only this scope's changes for a webhook, as name=scope. Repeatable."),
        Setting("webhooks.tables", flag: "webhook-table", .list, "Only this table's changes for a webhook, as name=table. Repeatable."),
        Setting("webhooks.batchSize", flag: "webhook-batch-size", .integer, default: "100", "The most changes in one webhook delivery."),
        Setting(
            "webhooks.maxFailures", flag: "webhook-max-failures", .integer, default: "10",
            "Failed deliveries in a row after which a webhook is parked."),
        Setting(
            "webhooks.initialBackoff", flag: "webhook-initial-backoff", .seconds, default: "0.5",
            "Seconds after a webhook's first failed delivery; the wait doubles with each failure."),
        Setting("webhooks.maxBackoff", flag: "webhook-max-backoff", .seconds, default: "60", "The longest wait between failed webhook deliveries, in seconds."),
        Setting("webhooks.timeout", flag: "webhook-timeout", .seconds, default: "10", "Seconds one webhook delivery (a POST) may take."),
    ]

    /// Every setting, each secret followed by its file twin.
    static let all: [Setting] = declared.flatMap { setting in [setting] + (setting.fileCompanion.map { [$0] } ?? []) }

    static subscript(key: String) -> Setting {
        guard let setting = all.first(where: { $0.key == key }) else { preconditionFailure("no setting \(key)") }
        return setting
    }

    /// The help of a setting's flag, from the table.
    static func help(_ key: String) -> ArgumentHelp { ArgumentHelp(self[key].helpLine) }

    /// The table for the README: `ferry-server config table`.
    static var markdown: String {
        var lines = ["| file key | environment | flag | default | what |", "|---|---|---|---|---|"]
        for setting in all {
            let fallback = setting.defaultValue.map { "`\($0)`" } ?? ""
            let help = setting.help.replacingOccurrences(of: "|", with: "\\|")
            lines.append("| `\(setting.key)` | `\(setting.environment)` | `\(setting.flag)` | \(fallback) | \(help) |")
        }
        return lines.joined(separator: "\n")
    }
}
