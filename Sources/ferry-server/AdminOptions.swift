import ArgumentParser
import FerryServer
import Foundation

/// Flags of `serve` for the app's backend: the admin API's listener and
/// credential, and webhooks.
struct AdminOptions: ParsableArguments {
    @Option(help: "Serve the admin API (/admin/v1/…) on this port; with it, --admin-token-file is required.")
    var adminPort: Int?

    @Option(help: "The address the admin API listens on (loopback by default: only this machine reaches it).")
    var adminHost = "127.0.0.1"

    @Option(help: "A file holding the admin credential (at least 32 characters; `openssl rand -hex 32 > admin-token`).")
    var adminTokenFile: String?

    @Option(help: "A webhook receiving row changes, as name=URL (https, or http on loopback). Repeatable.")
    var webhook: [String] = []

    @Option(help: "A file holding the secret that signs webhook deliveries (at least 16 bytes).")
    var webhookSecretFile: String?

    @Option(help: "Only this scope's changes for a webhook, as name=scope. Repeatable.")
    var webhookScope: [String] = []

    @Option(help: "Only this table's changes for a webhook, as name=table. Repeatable.")
    var webhookTable: [String] = []

    func admin() throws -> AdminConfiguration? {
        guard let adminPort else {
            guard adminTokenFile == nil else { throw ValidationError("--admin-token-file needs --admin-port") }
            return nil
        }
        guard (0...65535).contains(adminPort) else { throw ValidationError("--admin-port must be 0–65535") }
        guard let adminTokenFile else { throw ValidationError("--admin-port needs --admin-token-file: the admin API is never open") }
        do {
            var admin = try AdminConfiguration(port: adminPort, tokenFile: URL(filePath: adminTokenFile))
            admin.host = adminHost
            return admin
        } catch let error as FerryServerError {
            throw ValidationError("--admin-token-file: \(error.message)")
        }
    }

    func webhooks() throws -> [WebhookConfiguration] {
        guard !webhook.isEmpty else {
            guard webhookSecretFile == nil, webhookScope.isEmpty, webhookTable.isEmpty else {
                throw ValidationError("--webhook-secret-file, --webhook-scope and --webhook-table configure webhooks: name one with --webhook name=URL")
            }
            return []
        }
        guard let webhookSecretFile else { throw ValidationError("--webhook needs --webhook-secret-file: every delivery is signed") }
        let secret: String
        do {
            secret = try String(contentsOfFile: webhookSecretFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        } catch {
            throw ValidationError("--webhook-secret-file: cannot read \(webhookSecretFile): \(error.localizedDescription)")
        }
        let scopes = try Self.pairs(webhookScope, flag: "--webhook-scope")
        let tables = try Self.pairs(webhookTable, flag: "--webhook-table")
        var hooks: [WebhookConfiguration] = []
        for (name, text) in try Self.pairs(webhook, flag: "--webhook") {
            guard let url = URL(string: text), url.host != nil else { throw ValidationError("--webhook \(name)=\(text): not a URL") }
            guard !hooks.contains(where: { $0.name == name }) else { throw ValidationError("--webhook \(name) is named twice") }
            do {
                var hook = try WebhookConfiguration(name: name, url: url, secret: secret)
                hook.scope = scopes.first { $0.0 == name }?.1
                hook.table = tables.first { $0.0 == name }?.1
                hooks.append(hook)
            } catch let error as FerryServerError {
                throw ValidationError("--webhook: \(error.message)")
            }
        }
        for (name, _) in scopes + tables where !hooks.contains(where: { $0.name == name }) {
            throw ValidationError("--webhook-scope and --webhook-table name a webhook given with --webhook; there is no `\(name)`")
        }
        return hooks
    }

    private static func pairs(_ entries: [String], flag: String) throws -> [(String, String)] {
        try entries.map { entry in
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { throw ValidationError("\(flag) \(entry): write name=value") }
            return (parts[0], parts[1])
        }
    }
}
