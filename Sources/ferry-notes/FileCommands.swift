import ArgumentParser
import Ferry
import FerryNotes
import Foundation
import GRDB

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Import notes from JSON Lines or a folder of Markdown files (as `export` writes them).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "A .jsonl file, or a folder of Markdown files.") var path: String
    @Flag(
        name: .customLong("keep-existing"),
        help: "Leave notes whose id is here already as they are (restoring a saved export after a sync fetched the rest).")
    var keepExisting = false

    func run() async throws {
        let library = try global.library()
        let bar = Terminal.isErrorInteractive && !global.json
        let before = Set(try library.notebooks().map(\.name))
        let count: Int
        do {
            count = try library.importNotes(from: URL(filePath: path), keepExisting: keepExisting) { done in
                if bar { FileHandle.standardError.write(Data("\r\u{1B}[Kimported \(done)".utf8)) } else if !global.json { tell("imported \(done)") }
            }
        } catch {
            if bar { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
            throw error
        }
        if bar { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        let created = try library.notebooks().map(\.name).filter { !before.contains($0) }.sorted()
        if global.json { return try global.printJSON(ImportReport(imported: count, createdNotebooks: created)) }
        for name in created { tell("created notebook \(name) (made on the server at the next sync)") }
        print("imported \(count) note\(count == 1 ? "" : "s")")
    }

    struct ImportReport: Encodable {
        var imported: Int
        var createdNotebooks: [String]
    }
}

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Export every note (deleted ones too).")
    @OptionGroup var global: GlobalOptions
    @Option(help: "jsonl or markdown.") var format: String = "jsonl"
    @Option(help: "A .jsonl file (`-` for standard output), or a folder for Markdown.") var out: String

    func run() async throws {
        guard let format = NotesLibrary.ExportFormat(rawValue: format) else { throw NotesError(.usage, "--format must be jsonl or markdown") }
        if out == "-" {
            guard format == .jsonl else { throw NotesError(.usage, "--out - writes JSON Lines; Markdown needs a folder") }
            let lines: Data
            do {
                lines = try global.library().exportedLines()
            } catch  where DatabaseProblem.isDamage(error) {
                return try salvage()
            }
            writeOut(lines)
            return
        }
        let count: Int
        do {
            count = try global.library().exportNotes(to: URL(filePath: out), format: format)
        } catch  where DatabaseProblem.isDamage(error) {
            guard format == .jsonl else {
                throw NotesError(.failure, "the database is damaged; export what can still be read as JSON Lines (--format jsonl)")
            }
            return try salvage()
        }
        if global.json { try global.printJSON(["exported": count]) } else { print("exported \(count) notes to \(out)") }
    }
}

extension Export {
    /// A damaged database: every note still readable, one at a time; the
    /// file is written even when some were lost, and the run says how many.
    func salvage() throws {
        let path = global.path
        let saved: NotesLibrary.Salvage
        do {
            saved = try NotesLibrary.salvage(path: path)
        } catch let error as DatabaseError {
            throw DatabaseProblem.unreadable(path, reason: error.message ?? "\(error.resultCode)")
        }
        if out == "-" { writeOut(saved.lines) } else { try saved.lines.write(to: URL(filePath: out), options: .atomic) }
        var lost = ""
        if saved.lostAtMost > 0 { lost += "; damaged pages hid at most \(saved.lostAtMost) more" }
        if saved.stoppedEarly { lost += "; the walk could not get past one damaged stretch, so notes after it may be missing too" }
        let message = "\(path) is damaged: saved the \(saved.notes) notes still readable to \(out == "-" ? "standard output" : out)\(lost)"
        if saved.lostAtMost > 0 || saved.stoppedEarly { throw NotesError(.failure, message) }
        tell(message)
    }
}

struct Attach: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Attach a file to a note (uploaded at the next sync).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The note's id (any unique prefix).") var id: String
    @Argument(help: "The file to attach.") var file: String

    func run() async throws {
        let library = try global.library()
        let attachment = try await library.attach(file: URL(filePath: file), to: id)
        if global.json { try global.printJSON(AttachmentView(attachment)) } else { print(attachment.id) }
    }
}

struct AttachmentsList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "attachments", abstract: "A note's attachments.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The note's id (any unique prefix).") var id: String

    func run() async throws {
        let attachments = try global.library().attachments(of: id)
        if global.json { return try global.printJSON(attachments.map(AttachmentView.init)) }
        guard !attachments.isEmpty else { return tell("no attachments") }
        for attachment in attachments {
            print("\(attachment.id.prefix(8))  \(attachment.name ?? "")  \(ByteCountFormatter.string(fromByteCount: attachment.size, countStyle: .file))  \(AttachmentView(attachment).state)")
        }
    }
}

struct Detach: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Remove an attachment from its note (on every device at the next sync).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The attachment's id (any unique prefix).") var attachmentID: String

    func run() async throws {
        let removed = try await global.library().removeAttachment(attachmentID)
        if global.json { try global.printJSON(["removed": removed.id]) } else { print("removed \(removed.name ?? removed.id) from note \(removed.rowID.prefix(8))") }
    }
}

struct OpenAttachment: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open-attachment", abstract: "Fetch an attachment if need be; print its path, or copy it to --out.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The attachment's id (any unique prefix).") var attachmentID: String
    @Option(help: "Copy it to this path; without it, the path of a copy named as the attached file is printed.") var out: String?

    func run() async throws {
        let library = try global.library()
        let url = try await library.openAttachment(attachmentID, copyTo: out.map { URL(filePath: $0) })
        if global.json { try global.printJSON(["path": url.path]) } else { print(url.path) }
    }
}

/// An attachment as printed.
struct AttachmentView: Encodable {
    var id: String
    var name: String?
    var contentType: String?
    var size: Int64
    var sha256: String
    var state: String

    init(_ attachment: Ferry.Attachment) {
        id = attachment.id
        name = attachment.name
        contentType = attachment.contentType
        size = attachment.size
        sha256 = attachment.sha256
        state =
            switch attachment.state {
            case .localOnly: "not uploaded"
            case .uploading(let sent): "uploading (\(sent) bytes sent)"
            case .uploaded: "here"
            case .downloading(let received): "downloading (\(received) bytes)"
            case .missing: "on the server"
            case .failed(let reason): "failed: \(reason)"
            }
    }
}
