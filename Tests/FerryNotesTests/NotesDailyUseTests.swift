import Ferry
import FerryNotes
import FerryTestSupport
import Foundation
import GRDB
import Testing

/// What a person using `ferry-notes` every day runs into, driven through
/// the built binary: columns in terminal cells, paging hints that lead
/// somewhere and name the database, and a sync line that never swallows
/// an error.
@Suite(.serialized) struct NotesDailyUseTests {
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

    /// A database this user may only read (another user's file, a folder
    /// it cannot write, no write-ahead log beside it): reading commands
    /// work, and a change says why it cannot be made.
    @Test func aReadOnlyDatabaseCanBeListedSearchedAndExported() throws {
        let folder = directory.url.appending(path: "readonly")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let owner = NotesCLI(database: folder.appending(path: "notes.sqlite").path, environment: ["COLUMNS": "120"])
        let id = try owner.ok(["add", "Field notes", "--body", "kestrel over the ridge", "--tag", "birds"])
        // The log moved into the file and removed, as after a clean close or a copy.
        let queue = try DatabaseQueue(path: owner.database)
        try queue.inDatabase { db in _ = try Row.fetchAll(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try queue.close()
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: owner.database + suffix) }
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: owner.database)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path) }
        // Root reads and writes anything: there the reader is `nobody`.
        let reader = getuid() == 0 ? try owner.as(user: "nobody", copyingBinaryInto: directory.url.appending(path: "bin")) : owner
        #expect(try reader.ok(["ls"]).contains("Field notes"))
        #expect(try reader.ok(["search", "kestrel"]).contains("Field notes"))
        #expect(try reader.ok(["show", String(id.prefix(6))]).contains("kestrel over the ridge"))
        #expect(try reader.ok(["export", "--out", "-"]).contains("\"title\":\"Field notes\""))
        let add = try reader.run(["add", "Another"])
        #expect(add.status == 1 && add.errors.contains("is read-only for this user: reading commands work"), "\(add)")

        // With its log beside it (the newest note only there), read through the log.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: owner.database)
        let latest = try owner.ok(["add", "Only in the log"])
        #expect(try Data(contentsOf: URL(filePath: owner.database + "-wal")).count > 0)
        for file in [owner.database, owner.database + "-wal", owner.database + "-shm"] {
            try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: file)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder.path)
        #expect(try reader.ok(["show", latest]).contains("Only in the log"))
        #expect(try reader.run(["add", "Another"]).status == 1)
    }

    /// Long output on a terminal goes through the pager, which holds the
    /// terminal as the foreground job and gets the table laid out for the
    /// terminal with the next page's command after it; `--no-pager` and a
    /// pipe print straight.
    @Test func aTerminalGetsThePagerAndAPipeDoesNot() throws {
        #if os(Linux)
            let notes = try offlineDevice("pager")
            for index in 0..<5 { _ = try notes.ok(["add", "paged \(index)"]) }
            let paged = directory.path("paged.txt")
            // The pager records what it read, and whether its group holds the terminal (/proc/<pid>/stat: pgrp is field 5, tpgid 8).
            let pager = "cat > \(paged); set -- $(cat /proc/$$/stat); [ \"$5\" = \"$8\" ] && echo foreground >> \(paged)"
            func onTerminal(_ arguments: String) throws -> Int32 {
                let process = Process()
                process.executableURL = URL(filePath: "/usr/bin/script")
                process.arguments = ["-qec", "\(try NotesCLI.executable().path) \(arguments) --db \(notes.database)", "/dev/null"]
                process.environment = ProcessInfo.processInfo.environment.merging(["FERRY_NOTES_PAGER": pager, "COLUMNS": "120"]) { $1 }
                process.standardInput = FileHandle.nullDevice
                process.standardOutput = FileHandle.nullDevice
                try process.run()
                let pid = process.processIdentifier
                let killer = DispatchWorkItem { kill(pid, SIGKILL) }
                DispatchQueue.global().asyncAfter(deadline: .now() + 30, execute: killer)
                process.waitUntilExit()
                killer.cancel()
                return process.terminationStatus
            }
            #expect(try onTerminal("ls --limit 3") == 0)
            let shown = try String(contentsOfFile: paged, encoding: .utf8)
            #expect(shown.contains("just now") && shown.contains("paged 4"), "laid out for the terminal: \(shown)")
            #expect(shown.contains("more: ferry-notes --db \(notes.database) ls --limit 3 --after "), "\(shown)")
            #expect(shown.hasSuffix("foreground\n"), "the pager holds the terminal: \(shown)")
            try FileManager.default.removeItem(atPath: paged)
            #expect(try onTerminal("ls --no-pager") == 0)
            #expect(!FileManager.default.fileExists(atPath: paged))
            // A pager that is not there is said, not silent.
            let missing = Process()
            missing.executableURL = URL(filePath: "/usr/bin/script")
            missing.arguments = ["-qec", "\(try NotesCLI.executable().path) ls --db \(notes.database)", "/dev/null"]
            missing.environment = ProcessInfo.processInfo.environment.merging(["FERRY_NOTES_PAGER": "no-such-pager-here"]) { $1 }
            missing.standardInput = FileHandle.nullDevice
            let screen = Pipe()
            missing.standardOutput = screen
            try missing.run()
            let text = String(decoding: screen.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            missing.waitUntilExit()
            #expect(text.contains("the pager `no-such-pager-here` was not found"), "\(text)")
            var piped = notes
            piped.environment["FERRY_NOTES_PAGER"] = pager
            #expect(try piped.ok(["ls"]).contains("paged 0"))
            #expect(!FileManager.default.fileExists(atPath: paged))
        #endif
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
        #expect(hint.hasPrefix("more: ferry-notes --db \(notes.database) ls --tag fun --limit 2 --after "), "\(hint)")
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
        // A first sync: the server's estimate gives a gauge, a rate and the time left.
        status.pulled = 250
        status.pullEstimate = 1000
        #expect(SyncProgress.line(status, server: "s") == "receiving [#####---------------] 250/1000 (sent 5)")
        #expect(
            SyncProgress.line(status, server: "s", receiving: .seconds(5))
                == "receiving [#####---------------] 250/1000 · 50/s · 15 s left (sent 5)")
        status.pulled = 1000
        #expect(SyncProgress.line(status, server: "s", receiving: .seconds(2)).hasPrefix("receiving [####################] 1000/1000 · 500/s · 0 s left"))
        #expect(SyncProgress.timeLeft(130) == "3 min left" && SyncProgress.timeLeft(7500) == "2 h 5 min left")
        #expect(SyncProgress.line(nil, server: "http://x") == "connecting to http://x…")

        #if os(Linux)
            // On a terminal (`script` gives it one), against a server that is not there.
            let notes = try offlineDevice("tty-sync")
            let process = Process()
            process.executableURL = URL(filePath: "/usr/bin/script")
            process.arguments = ["-qec", "\(try NotesCLI.executable().path) sync --db \(notes.database)", "/dev/null"]
            let output = Pipe()
            // Nothing to type: `script` gets end-of-file at once, and is killed if it outstays 30 s.
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = output
            try process.run()
            let pid = process.processIdentifier
            let killer = DispatchWorkItem { kill(pid, SIGKILL) }
            DispatchQueue.global().asyncAfter(deadline: .now() + 30, execute: killer)
            let screen = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            killer.cancel()
            #expect(process.terminationStatus == 6, "\(screen)")
            #expect(screen.hasPrefix("\r\u{1B}[Kconnecting to http://127.0.0.1:9…"), "\(screen.debugDescription)")
            #expect(screen.contains("\r\u{1B}[Kferry-notes: the server at http://127.0.0.1:9 is unreachable"), "\(screen.debugDescription)")
        #endif
    }

    /// An import reads every line before it writes one: a bad line after
    /// the first batch imports nothing, and says everything wrong with
    /// each bad line at once; the times may be spelled either way.
    @Test func anImportWithABadLineImportsNothingAndSaysWhy() throws {
        let notes = try offlineDevice("import")
        let file = directory.url.appending(path: "notes.jsonl")
        var lines = (0..<600).map { #"{"id":"n\#($0)","title":"Note \#($0)","created_at":1700000000000,"updatedAt":1700000000001}"# }
        lines.append(#"{"tags":"fun","createdAt":true}"#)
        try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        let refused = try notes.run(["import", file.path])
        #expect(refused.status == 1, "\(refused)")
        #expect(
            refused.errors.contains("nothing imported: notes.jsonl:601: missing title; tags must be a list of text; createdAt must be milliseconds"),
            "\(refused.errors)")
        #expect(try notes.run(["ls"]).errors.contains("no notes"))
        lines.removeLast()
        try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        #expect(try notes.ok(["import", file.path]) == "imported 600 notes")
        let shown = try notes.ok(["show", "n599", "--json"])
        #expect(shown.contains(#""createdAt" : 1700000000000"#) && shown.contains(#""updatedAt" : 1700000000001"#), "\(shown)")
    }

    /// A Markdown export imported on a fresh device keeps each note's
    /// notebook (made there if missing); a hand-written folder imported
    /// twice is imported once.
    @Test func markdownRoundTripsKeepTheNotebookAndReimportsDoNotDouble() throws {
        let laptop = try offlineDevice("md-laptop")
        _ = try laptop.ok(["notebook", "create", "Team"])
        _ = try laptop.ok(["add", "In the team", "--notebook", "Team"])
        _ = try laptop.ok(["add", "Mine"])
        let folder = directory.url.appending(path: "export")
        _ = try laptop.ok(["export", "--format", "markdown", "--out", folder.path])
        let fresh = try offlineDevice("md-fresh")
        let imported = try fresh.run(["import", folder.path])
        #expect(imported.status == 0 && imported.errors.contains("created notebook Team"), "\(imported)")
        #expect(try fresh.ok(["ls", "--notebook", "Team"]).contains("In the team"))
        _ = try fresh.ok(["import", folder.path])
        #expect(try fresh.ok(["ls"]).split(separator: "\n").count == 3)

        let hand = directory.url.appending(path: "hand")
        try FileManager.default.createDirectory(at: hand, withIntermediateDirectories: true)
        try "# An idea\nno front matter at all\n".write(to: hand.appending(path: "idea.md"), atomically: true, encoding: .utf8)
        _ = try fresh.ok(["import", hand.path])
        _ = try fresh.ok(["import", hand.path])
        #expect(try fresh.ok(["ls"]).split(separator: "\n").filter { $0.contains("idea") }.count == 1)
    }

    /// The small things a daily user trips on, each as the binary does it.
    @Test func theSmallThings() throws {
        let notes = try offlineDevice("small")
        let long = "A title well past thirty-three characters, kept whole in a pipe"
        let id = try notes.ok(["add", long, "--tag", "b", "--tag", "a"])
        // Into a pipe with no $COLUMNS, titles whole; tags the same way everywhere.
        let listed = try NotesCLI(database: notes.database, environment: ["COLUMNS": ""]).ok(["ls"])
        #expect(listed.contains(long) && listed.contains("a, b"), "\(listed)")
        #expect(try notes.ok(["show", id]).contains("tags      a, b"))
        // Every --json key in camel case.
        for command in [["show", id], ["status"], ["ls"]] {
            let text = try notes.ok(command + ["--json"])
            let keys = text.split(separator: "\n").compactMap { line in
                line.split(separator: "\"", omittingEmptySubsequences: false).dropFirst().first.map(String.init)
            }.filter { !$0.isEmpty && text.contains("\"\($0)\" :") }
            #expect(!keys.isEmpty && !keys.contains { $0.contains("_") }, "\(command): \(keys)")
        }
        // A note in the trash is not edited until it is restored.
        _ = try notes.ok(["rm", id])
        let trashed = try notes.run(["edit", id, "--title", "changed"])
        #expect(trashed.status == 1 && trashed.errors.contains("in the trash"), "\(trashed)")
        _ = try notes.ok(["restore", id])
        // export --out - writes the lines, not a file named "-".
        let exported = try notes.ok(["export", "--out", "-"])
        #expect(exported.hasPrefix("{") && exported.contains(long) && !FileManager.default.fileExists(atPath: "-"))
        // An attachment opened keeps its name, extension and all, in a folder only this user reads.
        let file = directory.url.appending(path: "photo.jpeg")
        try Data("not really a photo".utf8).write(to: file)
        let attachment = try notes.ok(["attach", id, file.path])
        let opened = try notes.ok(["open-attachment", attachment])
        #expect(opened.hasSuffix("/photo.jpeg") && (try? String(contentsOfFile: opened, encoding: .utf8)) == "not really a photo", "\(opened)")
        let folder = URL(filePath: opened).deletingLastPathComponent().deletingLastPathComponent().path
        #expect((try FileManager.default.attributesOfItem(atPath: folder)[.posixPermissions] as? Int) == 0o700)
        // --version, and a mistyped command named as one.
        #expect(try notes.ok(["--version"]).hasPrefix("ferry-notes "))
        let mistyped = try notes.run(["lss"])
        #expect(mistyped.status == 64 && mistyped.errors.contains("`lss` is not a command (did you mean `ls`?)"), "\(mistyped)")
    }

    /// What a daily user expects from a notes tool on the command line.
    @Test func appendCatSizeWarningsPrivateFilesAndCompletion() throws {
        let notes = try offlineDevice("expected")
        // The database holds the token: its owner's alone.
        for file in [notes.database, notes.database + "-wal"] {
            #expect((try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int) == 0o600, "\(file)")
        }
        let id = try notes.ok(["add", "Log", "--body", "first"])
        _ = try notes.ok(["edit", id, "--append", "second"])
        #expect(try notes.run(["cat", id]).output == "first\nsecond\n")
        // cat gives a script the note's own bytes (a terminal gets them escaped, like every other command).
        let file = directory.url.appending(path: "body.txt")
        try "x\u{1B}[31mred".write(to: file, atomically: true, encoding: .utf8)
        _ = try notes.ok(["edit", id, "--body-file", file.path])
        #expect(try notes.run(["cat", id]).output == "x\u{1B}[31mred\n")
        // A note too large for a server's default limits is said at once, not at the next sync.
        let big = directory.url.appending(path: "big.txt")
        try String(repeating: "a", count: 5 << 20).write(to: big, atomically: true, encoding: .utf8)
        let added = try notes.run(["add", "Big", "--body-file", big.path])
        #expect(added.status == 0 && added.errors.contains("warning: note ") && added.errors.contains("will refuse it at sync"), "\(added)")
        // A file that cannot be read: said in words, exit 1 (3 is for a missing note).
        let missing = try notes.run(["add", "X", "--body-file", directory.path("missing.txt")])
        #expect(missing.status == 1 && missing.errors.contains("cannot read \(directory.path("missing.txt")): no such file"), "\(missing)")
        // Shell completion, from the argument parser.
        let completion = try notes.run(["--generate-completion-script", "bash"])
        #expect(completion.status == 0 && completion.output.contains("ferry-notes"), "\(completion.errors)")
    }
    /// Login refuses an expired token, and a database that synced with one
    /// server is moved to another only when asked (--switch-server).
    @Test func loginRefusesAnExpiredTokenAndAsksBeforeSwitchingServers() throws {
        let notes = NotesCLI(device: "login", in: directory)
        func token(_ claims: String) -> String {
            "x.\(Data(claims.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")).y"
        }
        let expired = try notes.run(["login", "--server", "http://127.0.0.1:9", "--token", token(#"{"sub":"alice","exp":1000}"#)])
        #expect(expired.status == 1 && expired.errors.contains("the token expired at 1970-01-01T00:16:40Z"), "\(expired)")
        let later = Int(Date().timeIntervalSince1970) + 3600
        _ = try notes.ok(["login", "--server", "http://127.0.0.1:9", "--token", token(#"{"sub":"alice","exp":\#(later)}"#)])
        let other = try notes.run(["login", "--server", "http://127.0.0.1:10", "--token", token(#"{"sub":"alice"}"#)])
        #expect(other.status == 64 && other.errors.contains("add --switch-server"), "\(other)")
        #expect(try notes.ok(["status"]).contains("127.0.0.1:9"))
        _ = try notes.ok(["login", "--server", "http://127.0.0.1:10", "--token", token(#"{"sub":"alice"}"#), "--switch-server"])
        #expect(try notes.ok(["status"]).contains("127.0.0.1:10"))
    }

    /// A tag list, an emptied trash, a removed attachment.
    @Test func tagsTheTrashAndAttachments() throws {
        let notes = try offlineDevice("tidy")
        let first = try notes.ok(["add", "One", "--tag", "home", "--tag", "todo"])
        _ = try notes.ok(["add", "Two", "--tag", "todo"])
        let gone = try notes.ok(["add", "Gone", "--tag", "old"])
        #expect(try notes.ok(["tags"]) == "todo  2\nhome  1\nold   1")
        _ = try notes.ok(["rm", gone])
        #expect(try notes.ok(["tags"]) == "todo  2\nhome  1")
        #expect(try notes.run(["empty-trash"]).status == 64, "asks for --yes off a terminal")
        #expect(try notes.ok(["empty-trash", "--yes"]) == "deleted 1 note for good")
        #expect(try notes.run(["show", gone]).status == 3)
        #expect(try notes.run(["empty-trash", "--yes"]).errors.contains("the trash is empty"))
        let file = directory.url.appending(path: "list.txt")
        try Data("milk".utf8).write(to: file)
        let attachment = try notes.ok(["attach", first, file.path])
        #expect(try notes.ok(["detach", String(attachment.prefix(8))]) == "removed list.txt from note \(first.prefix(8))")
        #expect(try notes.run(["attachments", first]).errors.contains("no attachments"))
    }

    /// Every exit code the README's table lists is the code a command
    /// exits with for that kind of error, and no command exits with one the
    /// table does not list.
    @Test func theExitCodeTableIsWhatCommandsDo() throws {
        let readme = try String(
            contentsOf: URL(filePath: #filePath).deletingLastPathComponent().appending(path: "../../README.md").standardized, encoding: .utf8)
        let table = Set(
            readme.split(separator: "\n").compactMap { line -> Int32? in
                let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
                return cells.count >= 2 ? Int32(cells[0]) : nil
            })
        let signedOut = NotesCLI(device: "codes-none", in: directory)
        let notes = try offlineDevice("codes")
        // Seventeen ids: two of them start with the same hex digit.
        let ids = try (0..<17).map { try notes.ok(["add", "note \($0)"]) }
        let prefix = try #require(Dictionary(grouping: ids, by: { $0.prefix(1) }).first { $0.value.count > 1 }?.key).description
        let cases: [(code: Int32, NotesCLI, [String])] = [
            (0, notes, ["ls"]),
            (1, notes, ["add", "x", "--body-file", directory.path("none.txt")]),
            (3, notes, ["show", "ffffffffffff"]),
            (4, notes, ["show", prefix]),
            (5, signedOut, ["sync"]),
            (6, notes, ["sync"]),
            (64, notes, ["ls", "--limit", "0"]),
        ]
        for (code, device, arguments) in cases {
            #expect(table.contains(code), "exit \(code) is not in the README's table")
            let result = try device.run(arguments)
            #expect(result.status == code, "ferry-notes \(arguments.joined(separator: " ")): \(result)")
        }
        #expect(table.isSubset(of: Set(cases.map(\.code) + [7])), "the table lists \(table.sorted()); 7 is shown in aRefusedChangeIsNamed")
    }

    /// `ls --since/--until`: days, times and ages, with every filter, and a
    /// next page that keeps the window.
    @Test func listingByTime() throws {
        let notes = try offlineDevice("dates")
        let day: Int64 = 86_400_000
        let november = try #require(NoteTime.parse("2026-11-01"))
        let file = directory.url.appending(path: "dated.jsonl")
        // Ten notes a day apart from November 1st, all tagged; and one from now.
        try (0..<10).map { #"{"id":"d\#($0)","title":"Day \#($0)","tags":["t"],"updatedAt":\#(november + Int64($0) * day)}"# }
            .joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        _ = try notes.ok(["import", file.path])
        _ = try notes.ok(["add", "Today", "--tag", "t"])
        for filter in [[], ["--tag", "t"]] {
            let window = try notes.ok(["ls", "--since", "2026-11-03", "--until", "2026-11-06"] + filter)
            // November 3rd from midnight, up to (not including) the 6th: days 2, 3 and 4.
            #expect(window.contains("Day 2") && window.contains("Day 4") && !window.contains("Day 1") && !window.contains("Day 5"), "\(window)")
            #expect(window.split(separator: "\n").count == 4, "\(window)")
            let recent = try notes.ok(["ls", "--since", "1h"] + filter)
            #expect(recent.contains("Today") && !recent.contains("Day "), "\(recent)")
        }
        let paged = try notes.run(["ls", "--since", "2026-11-03", "--limit", "2"])
        let hint = try #require(paged.errors.split(separator: "\n").first { $0.hasPrefix("more: ") }, "\(paged)")
        #expect(hint.contains("--since 2026-11-03T00:00:00"), "\(hint)")
        #expect(try notes.run(["ls", "--since", "last week"]).status == 64)
    }
}
