import ArgumentParser
import Ferry
import FerryNotes
import Foundation

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Import notes from JSON Lines or a folder of Markdown files (as `export` writes them).")
    @OptionGroup var global: GlobalOptions
    @Argument var path: String

    func run() async throws {
        let library = try global.library()
        let bar = Terminal.isErrorInteractive && !global.json
        let count = try library.importNotes(from: URL(filePath: path)) { done in
            if bar { FileHandle.standardError.write(Data("\r\u{1B}[Kimported \(done)".utf8)) } else if !global.json { tell("imported \(done)") }
        }
        if bar { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        if global.json { try global.printJSON(["imported": count]) } else { print("imported \(count) notes") }
    }
}

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Export every note (deleted ones too).")
    @OptionGroup var global: GlobalOptions
    @Option(help: "jsonl or markdown.") var format: String = "jsonl"
    @Option(help: "A .jsonl file, or a folder for Markdown.") var out: String

    func run() async throws {
        guard let format = NotesLibrary.ExportFormat(rawValue: format) else { throw NotesError(.usage, "--format must be jsonl or markdown") }
        let count = try global.library().exportNotes(to: URL(filePath: out), format: format)
        if global.json { try global.printJSON(["exported": count]) } else { print("exported \(count) notes to \(out)") }
    }
}

struct Attach: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Attach a file to a note (uploaded at the next sync).")
    @OptionGroup var global: GlobalOptions
    @Argument var id: String
    @Argument var file: String

    func run() async throws {
        let library = try global.library()
        let attachment = try await library.attach(file: URL(filePath: file), to: id)
        if global.json { try global.printJSON(AttachmentView(attachment)) } else { print(attachment.id) }
    }
}

struct AttachmentsList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "attachments", abstract: "A note's attachments.")
    @OptionGroup var global: GlobalOptions
    @Argument var id: String

    func run() async throws {
        let attachments = try global.library().attachments(of: id)
        if global.json { return try global.printJSON(attachments.map(AttachmentView.init)) }
        guard !attachments.isEmpty else { return tell("no attachments") }
        for attachment in attachments {
            print("\(attachment.id.prefix(8))  \(attachment.name ?? "")  \(ByteCountFormatter.string(fromByteCount: attachment.size, countStyle: .file))  \(AttachmentView(attachment).state)")
        }
    }
}

struct OpenAttachment: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open-attachment", abstract: "Fetch an attachment if need be; print its path, or copy it to --out.")
    @OptionGroup var global: GlobalOptions
    @Argument var attachmentID: String
    @Option var out: String?

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
