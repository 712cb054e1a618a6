import ArgumentParser
import FerryServer
import Foundation

struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Mint a bearer token for a user.")

    @OptionGroup var options: ServerOptions

    @Option(help: "The user id (the token's subject).")
    var user: String

    @Option(help: "How long the token lives: seconds, or a number with s, m, h or d.")
    var ttl: String = "24h"

    func validate() throws {
        _ = try lifetime()
    }

    func lifetime() throws -> Duration {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        var digits = Substring(ttl)
        var unit: Int64 = 1
        if let last = ttl.last, let scale = units[last] {
            digits = ttl.dropLast()
            unit = scale
        }
        guard let count = Int64(digits), count > 0, count <= 3650 * 86400 / unit else {
            throw ValidationError("--ttl \(ttl): write a positive number of seconds, or like 30m, 12h, 7d")
        }
        return .seconds(count * unit)
    }

    func run() async throws {
        let secret = try await options.settings(keys: ServerOptions.storeKeys).secret(create: false)
        let authority = await TokenAuthority(secret: secret.value)
        do {
            print(try await authority.mint(userID: user, lifetime: try lifetime()))
        } catch let error as FerryServerError {
            throw ValidationError(error.message)
        }
    }
}
