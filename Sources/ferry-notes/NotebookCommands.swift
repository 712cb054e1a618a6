import ArgumentParser
import Ferry
import FerryNotes
import FerryProtocol
import Foundation

struct NotebookCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notebook", abstract: "Shared notebooks.",
        subcommands: [Create.self, Share.self, ListNotebooks.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a notebook (made on the server at the next sync).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The notebook's name.") var name: String

        func run() async throws {
            let notebook = try global.library().createNotebook(name)
            if global.json { try global.printJSON(notebook) } else { print(notebook.scope) }
        }
    }

    struct Share: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Share a notebook with a user (applied at the next sync).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The notebook's name.") var name: String
        @Option(name: .customLong("with"), help: "The user to share it with.") var user: String
        @Option(help: "read, write or owner.") var role: String = "write"

        func run() async throws {
            guard let role = ScopeRole(rawValue: role) else { throw NotesError(.usage, "--role must be read or write") }
            try global.library().shareNotebook(name, with: user, role: role)
            print("\(name) shared with \(user) (\(role.rawValue)) at the next sync")
        }
    }

    struct ListNotebooks: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "ls", abstract: "The notebooks on this device.")
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let notebooks = try global.library().notebooks()
            if global.json { return try global.printJSON(notebooks) }
            guard !notebooks.isEmpty else { return tell("no notebooks") }
            for notebook in notebooks { print("\(notebook.name)  (owner \(notebook.owner), \(notebook.scope))") }
        }
    }
}
