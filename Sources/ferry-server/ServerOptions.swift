import ArgumentParser
import FerryServer
import Foundation

/// Flags every subcommand shares: where the data and the secret are.
struct ServerOptions: ParsableArguments {
    @Option(help: "The data directory: the SQLite store and the generated JWT secret.")
    var dataDir: String = "./ferry-data"

    @Option(help: "The HS256 secret for tokens (default: $FERRY_JWT_SECRET, else one generated in the data directory).")
    var jwtSecret: String?

    var dataDirectory: URL { URL(filePath: dataDir) }

    /// The JWT secret; with `create: false`, refused when the data
    /// directory holds none (no server ever ran there).
    func secret(create: Bool = true) throws -> JWTSecret {
        do {
            return try JWTSecret.resolve(
                flag: jwtSecret,
                environment: ProcessInfo.processInfo.environment,
                dataDirectory: dataDirectory,
                create: create
            )
        } catch let error as FerryServerError {
            throw ValidationError(error.message)
        }
    }
}
