import ArgumentParser
import Ferry
import FerryNotes
import FerryProtocol
import Foundation
import GRDB

struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Remember the server and your token (works offline).")
    @OptionGroup var global: GlobalOptions
    @Option(help: "The server, e.g. http://127.0.0.1:8080.") var server: String
    @Option(help: "A bearer token (`ferry-server token --user NAME` mints one).") var token: String?
    @Option(name: .customLong("token-file"), help: "Read the token from a file.") var tokenFile: String?
    @Flag(
        name: .customLong("switch-server"),
        help: "Sync this database with another server than before (its notes and changes go there at the next sync).")
    var switchServer = false

    func run() async throws {
        guard let url = URL(string: server), url.scheme == "http" || url.scheme == "https" else {
            throw NotesError(.usage, "--server \(server) is not an http(s) URL")
        }
        let text: String
        switch (token, tokenFile) {
        case (let token?, nil): text = token
        case (nil, let file?): text = try readText(file)
        default: throw NotesError(.usage, "give --token or --token-file")
        }
        let library = try global.library()
        // Another server than before is asked about (on a terminal) or asked for (--switch-server), never taken silently.
        if let previous = try library.setting("server"), previous != url.absoluteString, !switchServer {
            guard Terminal.isInteractive else {
                throw NotesError(.usage, "this database syncs with \(previous); add --switch-server to sync it with \(url.absoluteString) instead")
            }
            FileHandle.standardError.write(Data(TerminalText.safe("switch this database from \(previous) to \(url.absoluteString)? [y/N] ").utf8))
            guard let answer = readLine(), ["y", "yes"].contains(answer.lowercased()) else {
                throw NotesError(.failure, "still signed in to \(previous); nothing changed")
            }
        }
        let session = try library.signIn(server: url, token: text.trimmingCharacters(in: .whitespacesAndNewlines))
        if global.json { try global.printJSON(["user": session.user, "server": session.server.absoluteString]) } else { print("signed in as \(session.user) to \(session.server.absoluteString)") }
    }
}

struct Logout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Forget the token (the notes stay).")
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try global.library().signOut()
        print("signed out")
    }
}

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Send local changes and fetch everyone else's.")
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let library = try global.library()
        let bar = Terminal.isErrorInteractive && !global.json
        let server = (try? library.session())?.server.absoluteString ?? "the server"
        let last = Locked("")
        // When receiving began: the rate and the time left count from there.
        let receivingSince = Locked<ContinuousClock.Instant?>(nil)
        // One line redrawn in place on a terminal; elsewhere, each phase once.
        let show: @Sendable (SyncStatus?) -> Void = { status in
            if bar {
                var receiving: Duration?
                if let status, status.phase == .pulling {
                    let now = ContinuousClock.now
                    receiving =
                        now
                        - receivingSince.withLock { since in
                            if since == nil { since = now }
                            return since ?? now
                        }
                }
                let line = TerminalText.line(SyncProgress.line(status, server: server, receiving: receiving))
                guard last.exchange(line) != line else { return }
                FileHandle.standardError.write(Data("\r\u{1B}[K\(line)".utf8))
            } else if !global.json, let status, status.phase != .idle, last.exchange("\(status.phase)") != "\(status.phase)" {
                tell("\(status.phase)…")
            }
        }
        show(nil)
        let summary: SyncSummary
        do {
            summary = try await library.sync { status in show(status) }
        } catch {
            // The line is cleared on every way out: an error is printed on a line of its own.
            if bar { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
            throw error
        }
        if bar { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        for dropped in try library.takeDroppedServerTasks() { tell("the server refused a notebook change, dropped: \(dropped)") }
        let conflicts = try library.conflicts().count
        // A sync that leaves refused changes did not do all it was asked: it says what and why, and exits 7.
        let refused = summary.rejected > 0 ? try library.database.outbox.rejectedMutations() : []
        if global.json {
            struct Report: Encodable {
                var pushed, pulled, conflicts, rejected, attachmentsUploaded, attachmentsDownloaded, sentBack: Int
                var refusedScopes: [String]
            }
            try global.printJSON(
                Report(
                    pushed: summary.pushed, pulled: summary.pulled, conflicts: conflicts,
                    rejected: summary.rejected, attachmentsUploaded: summary.attachmentsUploaded,
                    attachmentsDownloaded: summary.attachmentsDownloaded, sentBack: summary.sentBack,
                    refusedScopes: summary.refusedScopes))
            if !refused.isEmpty { throw Rejected.refusal(refused) }
            return
        }
        if summary.sentBack > 0 {
            tell(
                "the server had lost \(summary.sentBack) change\(summary.sentBack == 1 ? "" : "s") this device held "
                    + "(restored from a backup, or wiped?); this device sent \(summary.sentBack == 1 ? "it" : "them") back")
        }
        var line = "synced: sent \(summary.pushed), received \(summary.pulled)"
        if summary.attachmentsUploaded + summary.attachmentsDownloaded > 0 {
            line += ", attachments up \(summary.attachmentsUploaded) down \(summary.attachmentsDownloaded)"
        }
        if conflicts > 0 { line += "; \(conflicts) conflict\(conflicts == 1 ? "" : "s"): `\(Suggestion.command("conflicts"))`" }
        print(line)
        if !refused.isEmpty { throw Rejected.refusal(refused) }
    }
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stay connected and print each change as it arrives, until Ctrl-C.")
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let library = try global.library()
        _ = try await library.sync()
        let engine = try library.engine(live: true)
        let seen = Locked(try await library.database.read { db in try Int64.fetchOne(db, sql: "SELECT max(updated_at) FROM note") ?? 0 })
        let changes = ValueObservation.tracking { db in try Int64.fetchOne(db, sql: "SELECT max(updated_at) FROM note") ?? 0 }
            .values(in: library.database.writer)
        await engine.start()
        tell("watching; Ctrl-C to stop")
        let interrupted = AsyncStream<Void> { continuation in
            signal(SIGINT, SIG_IGN)
            let source = SignalSource(DispatchSource.makeSignalSource(signal: SIGINT))
            source.source.setEventHandler { continuation.finish() }
            source.source.resume()
            continuation.onTermination = { _ in source.source.cancel() }
        }
        let printer = Task {
            for try await latest in changes where latest > seen.value {
                let since = seen.exchange(latest)
                let notes = try await library.database.read { db in
                    try Note.fetchAll(db, sql: "SELECT * FROM note WHERE updated_at > ? ORDER BY updated_at", arguments: [since])
                }
                for note in notes {
                    if global.json {
                        writeOut(try JSONEncoder().encode(note) + Data("\n".utf8))
                    } else {
                        let line = "\(note.isDeleted ? "deleted" : "changed")  \(note.id.prefix(8))  \(TerminalText.line(note.title))  (\(TerminalText.line(note.author)))\n"
                        writeOut(Data(line.utf8))
                    }
                }
            }
        }
        // Until Ctrl-C, or until the server refuses the token (it expired,
        // say): then watching cannot go on, and the user is told so.
        let refused = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in interrupted {}
                return false
            }
            group.addTask {
                for await status in engine.statusUpdates() where status.phase == .unauthorized { return true }
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        printer.cancel()
        await engine.stop()
        if refused {
            throw NotesError(.refused, "the server refused the token (it may have expired); log in again with `ferry-notes login` and a fresh one")
        }
    }
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Pending changes, conflicts, last sync, sizes and database timings.")
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let status = try global.library().status()
        if global.json { return try global.printJSON(status) }
        print("signed in     \(status.user.map { "\($0) at \(status.server ?? "")" } ?? "no (`\(Suggestion.command("login"))`)")")
        print("notes         \(status.notes) (\(status.deletedNotes) deleted)")
        print("pending       \(status.pendingChanges) change(s)\(status.pendingServerTasks > 0 ? ", \(status.pendingServerTasks) notebook task(s)" : "")")
        print("conflicts     \(status.conflicts)")
        print("rejected      \(status.rejectedChanges)")
        print("last sync     \(status.lastSync.map(Terminal.time) ?? "never")")
        print("database      \(bytes(status.databaseBytes))")
        print("attachments   \(bytes(status.attachmentBytes))\(status.attachmentsNotUploaded > 0 ? ", \(status.attachmentsNotUploaded) not uploaded" : "")")
        let timings = status.timings
        print(
            String(
                format: "transactions  %d writes (worst p95 %.2f ms, %d long), %d reads (worst p95 %.2f ms) over %d runs",
                timings.writeTransactions, timings.worstWriteP95Milliseconds, timings.longWriteTransactions,
                timings.readTransactions, timings.worstReadP95Milliseconds, timings.runs))
        print("busy waits    \(timings.busyWaits) (\(timings.busyTimeouts) timed out)")
    }

    private func bytes(_ count: Int64) -> String {
        ByteCountFormatter.string(fromByteCount: count, countStyle: .file)
    }
}

/// A signal source handed to the stream's termination handler.
private final class SignalSource: @unchecked Sendable {
    // @unchecked: a DispatchSource is thread-safe; it is not marked Sendable.
    let source: any DispatchSourceSignal
    init(_ source: any DispatchSourceSignal) { self.source = source }
}
