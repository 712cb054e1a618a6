import ArgumentParser
import Ferry
import FerryNotes
import FerryProtocol
import Foundation

struct Conflicts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Each conflict, mine against theirs.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var pager: PagerOptions

    func run() async throws {
        pager.start()
        let conflicts = try global.library().conflicts()
        if global.json { return try global.printJSON(conflicts) }
        guard !conflicts.isEmpty else { return tell("no conflicts") }
        for conflict in conflicts {
            let what = conflict.field.map { "its \($0)" } ?? "the whole \(conflict.table) (\(conflict.kind))"
            // A note by id and title; a category or notebook by its name.
            let subject = conflict.table == "note" ? "note \(conflict.noteID.prefix(8)) \"\(conflict.title)\"" : conflict.title
            print(
                "conflict \(conflict.id): \(subject), \(what)"
                    + (conflict.overriddenBy.map { ", overwritten by \($0)" } ?? ""))
            print("--- mine\n+++ theirs")
            for line in conflict.diff { print(line) }
            print("resolve: \(Suggestion.command("resolve \(conflict.id) --mine | --theirs | --edit"))\n")
        }
    }
}

struct Resolve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Settle a conflict: keep mine, take theirs, or edit the value.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The conflict's number, as `conflicts` prints it.") var conflictID: Int64?
    @Option(help: "Settle every conflict on this note instead (any unique prefix of its id).") var note: String?
    @Flag(help: "Keep this device's value.") var mine = false
    @Flag(help: "Take the other writer's value.") var theirs = false
    @Flag(help: "Open $EDITOR on both versions and keep what you save.") var edit = false

    func run() async throws {
        guard [mine, theirs, edit].filter({ $0 }).count == 1 else { throw NotesError(.usage, "give one of --mine, --theirs, --edit") }
        let library = try global.library()
        if let noteID = note {
            guard conflictID == nil, !edit else { throw NotesError(.usage, "with --note, give --mine or --theirs and no conflict number") }
            let count = try library.resolveAll(onNote: noteID, mine ? .mine : .theirs)
            return print("resolved \(count) conflict\(count == 1 ? "" : "s") on note \(noteID); `\(Suggestion.command("sync"))` sends the result")
        }
        guard let conflictID else { throw NotesError(.usage, "give a conflict number, or --note ID") }
        if mine { try library.resolve(conflictID, .mine) }
        if theirs { try library.resolve(conflictID, .theirs) }
        if edit {
            guard let conflict = try library.conflicts().first(where: { $0.id == conflictID }) else {
                throw NotesError(.notFound, "no conflict \(conflictID)")
            }
            let text = "\(conflict.mine ?? "")\n=======\n\(conflict.theirs ?? "")\n"
            let edited = try Editor.edit(text, name: "conflict-\(conflictID).txt")
            guard edited != text else {
                throw NotesError(.failure, "conflict \(conflictID) stays: nothing was changed in the editor")
            }
            var value = edited.replacingOccurrences(of: "\n=======\n", with: "\n")
            if value.hasSuffix("\n") { value.removeLast() }
            try library.resolve(conflictID, .edited(value))
        }
        print("resolved \(conflictID); `\(Suggestion.command("sync"))` sends the result")
    }
}
