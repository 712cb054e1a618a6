import Ferry
import FerryNotes
import FerryTestSupport
import Foundation
import Testing

/// What a person using `ferry-notes` every day runs into, driven through
/// the built binary: columns in terminal cells, paging hints that lead
/// somewhere and name the database, and a sync line that never swallows
/// an error.
@Suite struct NotesDailyUseTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    /// A device signed in to a server that is not there: every command but `sync` works.
    func offlineDevice(_ name: String) throws -> NotesCLI {
        let notes = NotesCLI(device: name, in: directory)
        let token = "x.\(Data("{\"sub\":\"alice\"}".utf8).base64EncodedString()).y"
        _ = try notes.ok(["login", "--server", "http://127.0.0.1:9", "--token", token])
        return notes
    }

    /// CJK, emoji and a tab in titles and categories: every row's columns
    /// start at the same terminal cell.
    @Test func wideCharactersKeepTheColumnsAligned() throws {
        let notes = try offlineDevice("wide")
        for (title, category) in [("漢字のノート", "カテゴリ"), ("Coffee ☕ time", "drinks"), ("plain title", "work"), ("tab\tin title", "日本")] {
            _ = try notes.ok(["add", title, "--category", category, "--tag", "t"])
        }
        let lines = try notes.ok(["ls"]).split(separator: "\n").map(String.init)
        #expect(lines.count == 5, "\(lines)")
        // The cell where the tags column ("t", "TAGS") starts, on every row.
        let starts = lines.map { line in TerminalText.cells(String(line.prefix(upTo: line.lastIndex(of: " ").map { line.index(after: $0) } ?? line.endIndex))) }
        #expect(Set(starts).count == 1, "columns start at cells \(starts):\n\(lines.joined(separator: "\n"))")
        #expect(!lines.contains { $0.contains("\t") })
        #expect(TerminalText.cells("漢字 ☕") == 7 && TerminalText.cells("e\u{301}") == 1)
        #expect(TerminalText.fit("漢字漢字", 5) == "漢字…" && TerminalText.cells(TerminalText.fit("漢字漢字", 6)) == 6)
    }

    /// A page with exactly `--limit` notes offers no next page; a longer
    /// list offers one, naming the database it was given, and running the
    /// suggestion shows the rest.
    @Test func aNextPageIsOfferedOnlyWhenThereIsOneAndItNamesTheDatabase() throws {
        let notes = try offlineDevice("paging")
        for index in 0..<2 { _ = try notes.ok(["add", "fun \(index)", "--tag", "fun"]) }
        let exact = try notes.run(["ls", "--tag", "fun", "--limit", "2"])
        #expect(exact.status == 0 && exact.lines.count == 3 && !exact.errors.contains("more:"), "\(exact)")
        _ = try notes.ok(["add", "fun 2", "--tag", "fun"])
        let first = try notes.run(["ls", "--tag", "fun", "--limit", "2"])
        let hint = try #require(first.errors.split(separator: "\n").first { $0.hasPrefix("more: ") }, "\(first)")
        #expect(hint.hasPrefix("more: ferry-notes --db \(notes.database) ls --tag 'fun' --limit 2 --after "), "\(hint)")
        // The suggestion as a shell runs it (its own --db, quotes and all).
        let process = Process()
        process.executableURL = URL(filePath: "/bin/sh")
        let command = String(hint.dropFirst("more: ".count)).replacingOccurrences(of: "ferry-notes ", with: "\(try NotesCLI.executable().path) ")
        process.arguments = ["-c", command]
        let output = Pipe()
        process.standardOutput = output
        process.currentDirectoryURL = URL(filePath: "/")
        try process.run()
        let rest = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0 && rest.contains("fun 0") && rest.split(separator: "\n").count == 2, "\(rest)")
        // Every suggestion names it: here, the conflicts hint of `status`.
        let signedOut = NotesCLI(device: "nobody", in: directory)
        #expect(try signedOut.run(["sync"]).errors.contains("`ferry-notes --db \(signedOut.database) login"))
    }

    /// The sync line: it says where it connects before anything answers,
    /// shows a gauge only when there is a total, and is cleared before an
    /// error, which starts a line of its own.
    @Test func theSyncLineSaysWhatItDoesAndNeverSwallowsAnError() throws {
        var status = SyncStatus()
        status.phase = .pushing
        #expect(SyncProgress.line(status, server: "s") == "sending…", "nothing queued is no full gauge")
        status.pushed = 5
        status.pendingCount = 15
        #expect(SyncProgress.line(status, server: "s") == "sending   [#####---------------] 5/20")
        status.phase = .pulling
        status.pulled = 1
        #expect(SyncProgress.line(status, server: "s") == "receiving… 1 change (sent 5)")
        #expect(SyncProgress.line(nil, server: "http://x") == "connecting to http://x…")

        #if os(Linux)
            // On a terminal (`script` gives it one), against a server that is not there.
            let notes = try offlineDevice("tty-sync")
            let process = Process()
            process.executableURL = URL(filePath: "/usr/bin/script")
            process.arguments = ["-qec", "\(try NotesCLI.executable().path) sync --db \(notes.database)", "/dev/null"]
            let output = Pipe()
            process.standardInput = Pipe()
            process.standardOutput = output
            try process.run()
            let screen = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 6, "\(screen)")
            #expect(screen.hasPrefix("\r\u{1B}[Kconnecting to http://127.0.0.1:9…"), "\(screen.debugDescription)")
            #expect(screen.contains("\r\u{1B}[Kferry-notes: the server at http://127.0.0.1:9 is unreachable"), "\(screen.debugDescription)")
        #endif
    }
}
