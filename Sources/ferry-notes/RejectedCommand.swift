import ArgumentParser
import Ferry
import FerryNotes
import Foundation

/// Changes the server refused: listed with why, sent again once fixed, or
/// dropped (the server's version of the note comes back).
struct Rejected: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Changes the server refused: list them, send one again once fixed (--retry N), or drop one (--discard N).")
    @OptionGroup var global: GlobalOptions
    @Option(help: "Send change N of the list again, with the note as it is now (fix it first).") var retry: Int?
    @Option(help: "Drop change N of the list; the server's version of the note comes back at the next sync.") var discard: Int?

    func validate() throws {
        guard retry == nil || discard == nil else { throw ValidationError("give --retry or --discard, not both") }
    }

    func run() async throws {
        let outbox = try global.library().database.outbox
        let rejected = try outbox.rejectedMutations()
        if let number = retry ?? discard {
            guard rejected.indices.contains(number - 1) else {
                throw NotesError(.notFound, "there is no refused change \(number); `ferry-notes rejected` lists them")
            }
            let change = rejected[number - 1]
            if retry != nil {
                try outbox.resend(change)
                tell("queued again: \(change.table) \(change.rowID.prefix(8)); `ferry-notes sync` sends it")
            } else {
                try outbox.discard(change)
                tell("dropped: \(change.table) \(change.rowID.prefix(8)); at the next sync it takes the server's version (a note the server never had goes away)")
            }
            return
        }
        if global.json {
            struct Line: Encodable { var number: Int, table: String, rowID: String, reason: String }
            return try global.printJSON(rejected.enumerated().map { Line(number: $0 + 1, table: $1.table, rowID: $1.rowID, reason: $1.reason) })
        }
        guard !rejected.isEmpty else { return print("nothing refused") }
        for (index, change) in rejected.enumerated() {
            print("\(index + 1)  \(change.table)  \(change.rowID.prefix(8))  \(TerminalText.line(change.reason))")
        }
    }

    /// What a sync that left refused changes says, and exits 7 with.
    static func refusal(_ rejected: [RejectedMutation]) -> NotesError {
        let first = rejected.prefix(3).map { "\($0.table) \($0.rowID.prefix(8)): \(TerminalText.line($0.reason))" }
        return NotesError(
            .refused,
            "the server refused \(rejected.count) change\(rejected.count == 1 ? "" : "s") (" + first.joined(separator: "; ")
                + (rejected.count > 3 ? "; …" : "") + "); `ferry-notes rejected` lists them, --retry N sends one again, --discard N drops it")
    }
}
