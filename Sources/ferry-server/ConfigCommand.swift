import ArgumentParser
import FerryServer
import Foundation

/// `ferry-server config`: the settings, checked and explained.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Check a settings file, or list every setting.",
        subcommands: [Check.self, Table.self]
    )

    /// Checks the settings `serve` would run with and prints them, secrets
    /// redacted, each with where it came from.
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check the settings serve would run with (the --config file, FERRY_* variables and these flags) and print them."
        )

        @OptionGroup var serve: Serve

        func run() async throws {
            let settings = try await serve.options.settings(serve.flags)
            _ = try settings.serverConfiguration(secret: "")
            if let secret = settings.text("jwtSecret") {
                do {
                    try TokenAuthority.validate(secret: secret)
                } catch {
                    throw SettingsError("\(settings.name("jwtSecret")): \(error.message)")
                }
            }
            _ = try settings.postgresConfiguration()
            _ = try settings.drain()
            _ = try settings.logFormat()
            _ = try settings.logLevel()
            print(Self.report(settings))
            for (given, meant) in ResolvedSettings.mistypedVariables(in: ProcessInfo.processInfo.environment) {
                print("warning: \(given) is not a setting and is ignored; did you mean \(meant)?")
            }
        }

        /// One line a setting: key, value (or `<redacted>`), origin.
        static func report(_ settings: ResolvedSettings) -> String {
            let rows = ServerSettings.declared.map { setting -> (String, String, String) in
                guard let given = settings.value(setting.key) else { return (setting.key, "-", "") }
                let shown: String
                switch given.content {
                case _ where setting.secret: shown = "<redacted>"
                case .text(let text): shown = text
                case .integer(let number): shown = String(number)
                case .seconds(let seconds): shown = seconds.rounded() == seconds ? String(Int64(seconds)) : String(seconds)
                case .list(let values): shown = values.joined(separator: ", ")
                }
                return (setting.key, shown, given.origin.description)
            }
            let keyWidth = rows.map(\.0.count).max() ?? 0
            let valueWidth = min(40, rows.map(\.1.count).max() ?? 0)
            return rows.map { key, value, origin in
                let line =
                    key.padding(toLength: keyWidth + 2, withPad: " ", startingAt: 0)
                    + (origin.isEmpty ? value : value.padding(toLength: max(valueWidth, value.count) + 2, withPad: " ", startingAt: 0) + origin)
                return line
            }.joined(separator: "\n")
        }
    }

    /// Every setting as a Markdown table: file key, environment variable, flag, default.
    struct Table: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print every setting as a Markdown table (the README's).")

        func run() {
            print(ServerSettings.markdown)
        }
    }
}
