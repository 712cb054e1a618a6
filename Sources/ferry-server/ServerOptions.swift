import ArgumentParser
import FerryServer
import Foundation

/// Flags every subcommand shares: the settings file, where the data and the secret are.
struct ServerOptions: ParsableArguments {
    @Option(
        help: "A JSON or YAML file of settings (`ferry-server config table` lists its keys); FERRY_* variables and flags override it. Default: $FERRY_CONFIG."
    )
    var config: String?

    @Option(help: ServerSettings.help("dataDir"))
    var dataDir: String?

    @Option(help: ServerSettings.help("jwtSecret"))
    var jwtSecret: String?

    @Option(help: ServerSettings.help("jwtSecretFile"))
    var jwtSecretFile: String?

    var flags: [String: ResolvedSettings.Content] {
        Self.given([("dataDir", dataDir.map(ResolvedSettings.Content.text)), ("jwtSecret", jwtSecret.map { .text($0) }), ("jwtSecretFile", jwtSecretFile.map { .text($0) })])
    }

    /// The settings, from these flags and `more`, the environment and the
    /// `--config` file: all of them, or only `keys` (a command that is not
    /// the server reads only what it uses).
    func settings(_ more: [String: ResolvedSettings.Content] = [:], keys: Set<String>? = nil) async throws(SettingsError) -> ResolvedSettings {
        let environment = ProcessInfo.processInfo.environment
        let file = config ?? environment["FERRY_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
        return try await ResolvedSettings.resolve(flags: flags.merging(more) { $1 }, configFile: file, environment: environment, keys: keys)
    }

    /// What the commands beside the server read: where the data is, the secret, the store.
    static let storeKeys: Set<String> = [
        "dataDir", "jwtSecret", "postgres.url", "postgres.poolSize", "postgres.statementTimeout", "postgres.connectionTimeout",
        "postgres.lockTimeout", "postgres.maxPageBytes",
    ]

    /// The flags that were given, by setting key.
    static func given(_ pairs: [(String, ResolvedSettings.Content?)]) -> [String: ResolvedSettings.Content] {
        Dictionary(uniqueKeysWithValues: pairs.compactMap { key, value in value.map { (key, $0) } })
    }

    static func list(_ values: [String]) -> ResolvedSettings.Content? {
        values.isEmpty ? nil : .list(values)
    }
}
