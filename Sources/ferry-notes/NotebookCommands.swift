import ArgumentParser
import Ferry
import FerryNotes
import FerryProtocol
import Foundation

struct NotebookCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notebook", abstract: "Shared notebooks.",
        subcommands: [Create.self, Share.self, Unshare.self, Rename.self, Delete.self, ListNotebooks.self])

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
        @Option(help: "read or write.") var role: String = "write"

        func run() async throws {
            guard let role = ScopeRole(rawValue: role) else { throw NotesError(.usage, "--role must be read or write") }
            try global.library().shareNotebook(name, with: user, role: role)
            print("\(name) shared with \(user) (\(role.rawValue)) at the next sync")
        }
    }

    struct Unshare: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Take a member out of a notebook you own (at the next sync; their devices stop receiving it).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The notebook's name.") var name: String
        @Option(name: .customLong("from"), help: "The member to take out.") var user: String

        func run() async throws {
            try global.library().unshareNotebook(name, from: user)
            print("\(user) taken out of \(name) at the next sync")
        }
    }

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Rename a notebook (for every member, at the next sync).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The notebook's name.") var name: String
        @Argument(help: "Its new name.") var newName: String

        func run() async throws {
            try global.library().renameNotebook(name, to: newName)
            print("\(name) is now \(newName)")
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a notebook you own: its notes go to the trash (`restore` brings one back), for every member at the next sync.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The notebook's name.") var name: String

        func run() async throws {
            let trashed = try global.library().deleteNotebook(name)
            if global.json { return try global.printJSON(["trashed": trashed]) }
            print("deleted \(name); \(trashed) note\(trashed == 1 ? "" : "s") moved to the trash")
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
