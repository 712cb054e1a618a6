import ArgumentParser
import FerryProtocol
import FerryServer
import Foundation
import Logging

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the sync API (the default).")

    @OptionGroup var options: ServerOptions

    @Option(help: "The address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "The port to listen on (0 picks a free one).")
    var port: Int = 8080

    @Option(help: "A table's conflict policy, as table=policy (lastWriteWins, serverWins, clientWins, manual). Repeatable; other tables use lastWriteWins.")
    var policy: [String] = []

    @Option(help: "Days a tombstone is kept before garbage collection.")
    var tombstoneRetentionDays: Int = 30

    @OptionGroup var storeOptions: StoreOptions

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0–65535") }
        guard tombstoneRetentionDays >= 1 else { throw ValidationError("--tombstone-retention-days must be at least 1") }
        _ = try tables()
    }

    func tables() throws -> ServerTables {
        var tables = ServerTables()
        for entry in policy {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let policy = ConflictPolicy(rawValue: parts[1]) else {
                throw ValidationError("--policy \(entry): write table=policy, policy one of \(ConflictPolicy.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            tables.rules[parts[0]] = TableRule(policy: policy)
        }
        return tables
    }

    func run() async throws {
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        let secret = try options.secret()
        var configuration = FerryServerConfiguration(jwtSecret: secret.value)
        configuration.host = host
        configuration.port = port
        configuration.tables = try tables()
        configuration.tombstoneRetention = .seconds(tombstoneRetentionDays * 24 * 3600)
        let store: any SyncStore
        let storeDescription: String
        if let postgres = try storeOptions.postgresConfiguration() {
            store = PostgresSyncStore(configuration: postgres)
            storeDescription = "PostgreSQL at \(postgres.redactedURL), pool of \(postgres.poolSize)"
        } else {
            let sqlite = try SQLiteSyncStore(directory: options.dataDirectory)
            store = sqlite
            storeDescription = "SQLite in \(options.dataDir) (epoch \(sqlite.epoch))"
        }
        let dataDir = options.dataDir
        let app = try await FerryApplication.build(
            configuration: configuration,
            store: store,
            onServerRunning: { host, port in
                // Written unbuffered, so it shows at once even when piped.
                FileHandle.standardOutput.write(Data("""
                    Ferry server listening on http://\(host):\(port)
                    Store: \(storeDescription)
                    JWT secret: \(secret.origin)
                    Get a token: swift run ferry-server token --user alice --data-dir \(dataDir)

                    """.utf8))
            }
        )
        try await app.runService()
        FileHandle.standardOutput.write(Data("Ferry server stopped; store closed.\n".utf8))
    }
}
