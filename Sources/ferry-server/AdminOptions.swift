import ArgumentParser
import FerryServer
import Foundation

/// Flags of `serve` for the app's backend: the admin API's listener and
/// credential, and webhooks.
struct AdminOptions: ParsableArguments {
    @Option(help: ServerSettings.help("admin.port"))
    var adminPort: Int?

    @Option(help: ServerSettings.help("admin.host"))
    var adminHost: String?

    @Option(help: ServerSettings.help("admin.token"))
    var adminToken: String?

    @Option(help: ServerSettings.help("admin.consoleSessionTimeout"))
    var consoleSessionTimeout: Double?

    @Option(help: ServerSettings.help("admin.tokenFile"))
    var adminTokenFile: String?

    @Option(help: ServerSettings.help("webhooks.endpoints"))
    var webhook: [String] = []

    @Option(help: ServerSettings.help("webhooks.secret"))
    var webhookSecret: String?

    @Option(help: ServerSettings.help("webhooks.secretFile"))
    var webhookSecretFile: String?

    @Option(help: ServerSettings.help("webhooks.scopes"))
    var webhookScope: [String] = []

    @Option(help: ServerSettings.help("webhooks.tables"))
    var webhookTable: [String] = []

    @Option(help: ServerSettings.help("webhooks.batchSize"))
    var webhookBatchSize: Int?

    @Option(help: ServerSettings.help("webhooks.maxFailures"))
    var webhookMaxFailures: Int?

    @Option(help: ServerSettings.help("webhooks.initialBackoff"))
    var webhookInitialBackoff: Double?

    @Option(help: ServerSettings.help("webhooks.maxBackoff"))
    var webhookMaxBackoff: Double?

    @Option(help: ServerSettings.help("webhooks.timeout"))
    var webhookTimeout: Double?

    var flags: [String: ResolvedSettings.Content] {
        ServerOptions.given([
            ("admin.port", adminPort.map { .integer($0) }), ("admin.host", adminHost.map { .text($0) }),
            ("admin.token", adminToken.map { .text($0) }), ("admin.tokenFile", adminTokenFile.map { .text($0) }),
            ("admin.consoleSessionTimeout", consoleSessionTimeout.map { .seconds($0) }),
            ("webhooks.endpoints", ServerOptions.list(webhook)), ("webhooks.secret", webhookSecret.map { .text($0) }),
            ("webhooks.secretFile", webhookSecretFile.map { .text($0) }),
            ("webhooks.scopes", ServerOptions.list(webhookScope)), ("webhooks.tables", ServerOptions.list(webhookTable)),
            ("webhooks.batchSize", webhookBatchSize.map { .integer($0) }), ("webhooks.maxFailures", webhookMaxFailures.map { .integer($0) }),
            ("webhooks.initialBackoff", webhookInitialBackoff.map { .seconds($0) }), ("webhooks.maxBackoff", webhookMaxBackoff.map { .seconds($0) }),
            ("webhooks.timeout", webhookTimeout.map { .seconds($0) }),
        ])
    }
}
