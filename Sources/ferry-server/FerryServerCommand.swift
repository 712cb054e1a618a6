import ArgumentParser

@main
struct FerryServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ferry-server",
        abstract: "The Ferry sync server.",
        discussion: "With no subcommand, serves on embedded SQLite in ./ferry-data at 127.0.0.1:8080.",
        subcommands: [Serve.self, Token.self, Grant.self, Backup.self, Restore.self, ConfigCommand.self],
        defaultSubcommand: Serve.self
    )
}
