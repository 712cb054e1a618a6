import ArgumentParser
import FerryServer
import Foundation

/// Which store a command uses: SQLite in the data directory, or PostgreSQL.
struct StoreOptions: ParsableArguments {
    @Option(help: ServerSettings.help("postgres.url"))
    var postgres: String?

    @Option(help: ServerSettings.help("postgres.urlFile"))
    var postgresFile: String?

    @Option(help: ServerSettings.help("postgres.poolSize"))
    var poolSize: Int?

    @Option(help: ServerSettings.help("postgres.statementTimeout"))
    var statementTimeout: Double?

    @Option(help: ServerSettings.help("postgres.connectionTimeout"))
    var connectionTimeout: Double?

    @Option(help: ServerSettings.help("postgres.lockTimeout"))
    var lockTimeout: Double?

    @Option(help: ServerSettings.help("postgres.maxPageBytes"))
    var maxPageBytes: Int?

    var flags: [String: ResolvedSettings.Content] {
        ServerOptions.given([
            ("postgres.url", postgres.map { .text($0) }), ("postgres.urlFile", postgresFile.map { .text($0) }),
            ("postgres.poolSize", poolSize.map { .integer($0) }), ("postgres.statementTimeout", statementTimeout.map { .seconds($0) }),
            ("postgres.connectionTimeout", connectionTimeout.map { .seconds($0) }), ("postgres.lockTimeout", lockTimeout.map { .seconds($0) }),
            ("postgres.maxPageBytes", maxPageBytes.map { .integer($0) }),
        ])
    }
}
