import ArgumentParser
import FerryNotes
import Foundation

struct CategoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "category", abstract: "Categories and their colours.",
        subcommands: [ListCategories.self, Color.self, Rename.self, Delete.self])

    struct ListCategories: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "ls", abstract: "The categories, with their colours.")
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let categories = try global.library().categories()
            if global.json { return try global.printJSON(categories) }
            guard !categories.isEmpty else { return tell("no categories") }
            for category in categories { print("\(category.name)\(category.color.map { "  \($0)" } ?? "")") }
        }
    }

    struct Color: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Set a category's colour (none: clear it).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The category's name.") var name: String
        @Argument(help: "A colour such as #ff8800 or red, or `none` to clear it; left out, the current one is shown.") var color: String?

        func run() async throws {
            let library = try global.library()
            guard let color else {
                let current = try library.categories().first { $0.name == name }
                return print("\(name): \(current?.color ?? "no colour")")
            }
            let value = color == "none" ? nil : color
            try library.setColor(value, ofCategory: name)
            print("\(name): \(value ?? "no colour")")
        }
    }

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rename a category on every note that has it (its colour goes along), on every device at the next sync.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The category's name.") var name: String
        @Argument(help: "Its new name.") var newName: String

        func run() async throws {
            let change = try global.library().renameCategory(name, to: newName)
            if global.json { return try global.printJSON(["changed": change.changed, "readOnly": change.readOnly]) }
            print("\(name) is now \(newName) on \(change.changed) note\(change.changed == 1 ? "" : "s")")
            if change.readOnly > 0 { tell("\(change.readOnly) note(s) in notebooks you may only read keep \(name)") }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Take a category off every note that has it and forget its colour (the notes stay).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The category's name.") var name: String

        func run() async throws {
            let change = try global.library().deleteCategory(name)
            if global.json { return try global.printJSON(["changed": change.changed, "readOnly": change.readOnly]) }
            print("\(name) taken off \(change.changed) note\(change.changed == 1 ? "" : "s")")
            if change.readOnly > 0 { tell("\(change.readOnly) note(s) in notebooks you may only read keep \(name)") }
        }
    }
}
