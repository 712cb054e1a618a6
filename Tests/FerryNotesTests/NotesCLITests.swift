import FerryTestSupport
import Foundation
import Testing

/// The `ferry-notes` binary driven as a user drives it, against a live
/// `ferry-server` on loopback: each device its own database file.
@Suite(.serialized) struct NotesCLITests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    func device(_ name: String) -> NotesCLI {
        NotesCLI(device: name, in: directory)
    }

    @Test func twoDevicesEditOneNoteOfflineSeeTheConflictResolveItAndConverge() async throws {
        let server = try await NotesServer()
        defer { server.stop() }
        let token = try server.token("alice")
        let laptop = device("laptop"), phone = device("phone")
        for device in [laptop, phone] {
            _ = try device.ok(["login", "--server", server.url, "--token", token])
        }
        let id = try laptop.ok(["add", "Groceries", "--body", "milk\neggs", "--tag", "home", "--category", "errands"])
        _ = try laptop.ok(["sync"])
        _ = try phone.ok(["sync"])
        #expect(try phone.ok(["show", String(id.prefix(6))]).contains("milk\neggs"))

        // Both edit the body offline, then sync: the phone's edit is later and wins; the laptop learns of it.
        _ = try laptop.ok(["edit", String(id.prefix(5)), "--body", "milk\neggs\nbread"])
        _ = try phone.ok(["edit", String(id.prefix(5)), "--body", "milk\noat milk\neggs"])
        _ = try laptop.ok(["sync"])
        let phoneSync = try phone.ok(["sync"])
        _ = try laptop.ok(["sync"])
        let conflicts = try [laptop, phone].map { try $0.ok(["conflicts"]) }.joined(separator: "\n")
        #expect(conflicts.contains("conflict "), "\(phoneSync)\n\(conflicts)")
        #expect(conflicts.contains("+oat milk") || conflicts.contains("-oat milk"), "\(conflicts)")
        #expect(conflicts.contains("bread"), "\(conflicts)")
        #expect(!conflicts.contains("updated_at"), "bookkeeping conflicts are settled, not shown: \(conflicts)")

        // The device holding the conflict keeps its own version; both converge on it.
        let holder = try laptop.ok(["conflicts"]).contains("conflict ") ? laptop : phone
        let listing = try holder.ok(["conflicts"])
        let conflictID = try #require(
            listing.split(separator: "\n").first { $0.hasPrefix("conflict ") }?
                .split(separator: " ")[1].split(separator: ":").first.map(String.init))
        let mine = holder.database == laptop.database ? "milk\neggs\nbread" : "milk\noat milk\neggs"
        // An editor that saves nothing new settles nothing (it once kept both versions run together).
        var unchanged = holder
        unchanged.environment["EDITOR"] = "true"
        unchanged.environment["VISUAL"] = ""
        let untouched = try unchanged.run(["resolve", conflictID, "--edit"])
        #expect(untouched.status == 1 && untouched.errors.contains("conflict \(conflictID) stays"), "\(untouched)")
        #expect(try holder.ok(["conflicts"]).contains("conflict \(conflictID):"))
        _ = try holder.ok(["resolve", conflictID, "--mine"])
        #expect(try holder.run(["conflicts"]).errors.contains("no conflicts"))
        for _ in 0..<2 {
            _ = try holder.ok(["sync"])
            _ = try (holder.database == laptop.database ? phone : laptop).ok(["sync"])
        }
        for device in [laptop, phone] {
            let shown = try device.ok(["show", id, "--json"])
            #expect(shown.contains(mine.replacingOccurrences(of: "\n", with: "\\n")), "\(device.database): \(shown)")
        }

        // A later conflict never takes a settled one's number: `resolve <number>` from shell history reaches nothing.
        _ = try laptop.ok(["edit", String(id.prefix(5)), "--body", "laptop again"])
        _ = try phone.ok(["edit", String(id.prefix(5)), "--body", "phone again"])
        for device in [laptop, phone, laptop] { _ = try device.ok(["sync"]) }
        let again = try laptop.ok(["conflicts"]).contains("conflict ") ? laptop : phone
        let second = try #require(
            try again.ok(["conflicts"]).split(separator: "\n").first { $0.hasPrefix("conflict ") }?
                .split(separator: " ")[1].split(separator: ":").first.map(String.init))
        // The same edits in the same order: the same device holds it.
        #expect(again.database == holder.database)
        #expect(second != conflictID, "conflict \(conflictID)'s number was given again")
        #expect(try again.run(["resolve", conflictID, "--mine"]).status == 3)
        _ = try again.ok(["resolve", second, "--theirs"])
    }

    @Test func aSharedNotebookSyncsToItsMemberAndNotToAThirdUser() async throws {
        let server = try await NotesServer()
        defer { server.stop() }
        let alice = device("alice"), bob = device("bob"), carol = device("carol")
        for (device, user) in [(alice, "alice"), (bob, "bob"), (carol, "carol")] {
            _ = try device.ok(["login", "--server", server.url, "--token", try server.token(user)])
        }
        _ = try alice.ok(["notebook", "create", "Trip"])
        _ = try alice.ok(["notebook", "share", "Trip", "--with", "bob", "--role", "write"])
        let shared = try alice.ok(["add", "Packing list", "--body", "passport", "--notebook", "Trip"])
        let privateNote = try alice.ok(["add", "Diary", "--body", "private"])
        _ = try alice.ok(["sync"])
        _ = try bob.ok(["sync"])
        _ = try carol.ok(["sync"])
        #expect(try bob.ok(["notebook", "ls"]).contains("Trip"))
        let bobs = try bob.ok(["ls", "--notebook", "Trip"])
        #expect(bobs.contains("Packing list"))
        #expect(try bob.run(["show", privateNote]).status == 3)
        #expect(try carol.run(["show", shared]).status == 3)
        #expect(try carol.run(["notebook", "ls"]).errors.contains("no notebooks"))
        // Bob writes to it; Alice sees it.
        _ = try bob.ok(["edit", shared, "--add-tag", "checked"])
        _ = try bob.ok(["sync"])
        _ = try alice.ok(["sync"])
        #expect(try alice.ok(["ls", "--tag", "checked"]).contains("Packing list"))
        #expect(try alice.ok(["search", "passport"]).contains(String(shared.prefix(8))))
    }

    /// A notebook renamed reaches its member under the new name; taking
    /// the member out (offline, done at the next sync) stops the notebook's
    /// news reaching them; deleting it trashes its notes for everyone.
    /// Categories rename (colour and all) and go.
    @Test func notebooksAndCategoriesRenameUnshareAndDelete() async throws {
        let server = try await NotesServer()
        defer { server.stop() }
        let alice = device("alice-organizes"), bob = device("bob-organizes")
        for (device, user) in [(alice, "alice"), (bob, "bob")] {
            _ = try device.ok(["login", "--server", server.url, "--token", try server.token(user)])
        }
        _ = try alice.ok(["notebook", "create", "Trip"])
        _ = try alice.ok(["notebook", "share", "Trip", "--with", "bob"])
        let packing = try alice.ok(["add", "Packing list", "--notebook", "Trip", "--category", "todo"])
        let diary = try alice.ok(["add", "Diary", "--category", "todo"])
        _ = try alice.ok(["category", "color", "todo", "#ff8800"])
        _ = try alice.ok(["sync"])
        _ = try bob.ok(["sync"])
        #expect(try bob.ok(["ls", "--notebook", "Trip"]).contains("Packing list"))

        _ = try alice.ok(["notebook", "rename", "Trip", "Lisbon 2026"])
        #expect(try alice.run(["notebook", "rename", "Nope", "X"]).status == 3)
        _ = try alice.ok(["sync"])
        _ = try bob.ok(["sync"])
        #expect(try bob.ok(["notebook", "ls"]).contains("Lisbon 2026"))
        #expect(try bob.ok(["ls", "--notebook", "Lisbon 2026"]).contains("Packing list"))
        #expect(try bob.run(["notebook", "unshare", "Lisbon 2026", "--from", "alice"]).errors.contains("only alice"))

        // Categories: renamed on both notes with the colour; then deleted, the notes kept.
        #expect(try alice.ok(["category", "rename", "todo", "errands"]).contains("on 2 notes"))
        #expect(try alice.ok(["category", "ls"]) == "errands  #ff8800")
        #expect(try alice.ok(["show", diary]).contains("errands"))
        _ = try alice.ok(["sync"])
        _ = try bob.ok(["sync"])
        #expect(try bob.ok(["show", packing]).contains("errands"))
        #expect(try alice.ok(["category", "delete", "errands"]).contains("taken off 2 notes"))
        #expect(try alice.run(["category", "ls"]).errors.contains("no categories"))
        #expect(try alice.run(["category", "delete", "errands"]).status == 3)

        // A user who is no member: the server says so at the sync, and nothing else stops.
        _ = try alice.ok(["notebook", "unshare", "Lisbon 2026", "--from", "mallory"])
        let typo = try alice.run(["sync"])
        #expect(typo.status == 0 && typo.errors.contains("`mallory` is not a member"), "\(typo)")

        // Unshared: what Alice writes there next no longer reaches Bob, and Bob's writes to it are refused.
        _ = try alice.ok(["notebook", "unshare", "Lisbon 2026", "--from", "bob"])
        _ = try alice.ok(["sync"])
        _ = try alice.ok(["add", "Hotel booking", "--notebook", "Lisbon 2026"])
        _ = try alice.ok(["sync"])
        _ = try bob.run(["sync"])
        #expect(!(try bob.ok(["ls"]).contains("Hotel booking")))
        _ = try bob.ok(["edit", packing, "--title", "Bob was here"])
        let refused = try bob.run(["sync"])
        #expect(refused.status == 7, "\(refused)")
        _ = try alice.ok(["sync"])
        #expect(try alice.ok(["show", packing]).contains("Packing list"))

        // Deleted: its notes in the trash, the notebook gone from the list.
        #expect(try alice.ok(["notebook", "delete", "Lisbon 2026"]).contains("2 notes moved to the trash"))
        #expect(try alice.run(["notebook", "ls"]).errors.contains("no notebooks"))
        #expect(try alice.ok(["ls", "--deleted"]).contains("Hotel booking"))
        _ = try alice.ok(["sync"])
        _ = try alice.ok(["restore", packing])
        #expect(try alice.ok(["ls"]).contains("Packing list"))
    }

    @Test func tenThousandImportedNotesSyncToASecondDevice() async throws {
        let server = try await NotesServer()
        defer { server.stop() }
        let token = try server.token("alice")
        let first = device("first"), second = device("second")
        for device in [first, second] { _ = try device.ok(["login", "--server", server.url, "--token", token]) }
        var lines: [String] = []
        for index in 0..<10_000 {
            let tags = index % 7 == 0 ? "[\"seven\"]" : "[]"
            lines.append(
                "{\"id\":\"imp\(String(format: "%05d", index))\",\"title\":\"Imported \(index)\",\"body\":\"naïve café \(index)\",\"tags\":\(tags),\"created_at\":\(1_700_000_000_000 + index),\"updated_at\":\(1_700_000_000_000 + index)}"
            )
        }
        let file = directory.url.appending(path: "notes.jsonl")
        try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        #expect(try first.ok(["import", file.path]) == "imported 10000 notes")
        _ = try first.ok(["sync"])
        let synced = try second.ok(["sync", "--json"])
        #expect(synced.contains("\"pulled\" : 10000"), "\(synced)")
        let status = try second.ok(["status", "--json"])
        #expect(status.contains("\"notes\" : 10000"), "\(status)")
        #expect(try second.ok(["ls", "--tag", "seven", "--limit", "5"]).contains("Imported 9996"))
        // Diacritics folded, prefix matched, on rows that arrived by sync.
        #expect(try second.ok(["search", "naive caf", "--limit", "3"]).contains("Imported"))
        // Export round-trips through import.
        let exported = directory.url.appending(path: "export.jsonl")
        _ = try second.ok(["export", "--format", "jsonl", "--out", exported.path])
        let third = device("third")
        _ = try third.ok(["login", "--server", server.url, "--token", token])
        #expect(try third.ok(["import", exported.path]) == "imported 10000 notes")
        #expect(try third.ok(["show", "imp09999", "--json"]).contains("naïve café 9999"))
    }

    @Test func withTheServerDownEveryCommandButSyncWorksAndNothingIsLost() async throws {
        let server = try await NotesServer()
        let token = try server.token("alice")
        let url = server.url
        server.stop()
        let notes = device("offline")
        _ = try notes.ok(["login", "--server", url, "--token", token])
        let id = try notes.ok(["add", "Written offline", "--body", "on a plane"])
        _ = try notes.ok(["edit", id, "--add-tag", "travel"])
        #expect(try notes.ok(["ls"]).contains("Written offline"))
        _ = try notes.ok(["notebook", "create", "Work"])
        let sync = try notes.run(["sync"])
        #expect(sync.status == 6, "\(sync)")
        #expect(sync.errors.contains("unreachable") && !sync.errors.contains("Fatal"), "\(sync)")
        #expect(sync.errors.split(separator: "\n").count <= 3, "one clear line: \(sync)")
        let status = try notes.ok(["status", "--json"])
        // The note and the notebook, both still queued.
        #expect(status.contains("\"pendingChanges\" : 2") && status.contains("\"pendingServerTasks\" : 1"), "\(status)")
        // Bad input: one line on stderr, a documented exit code.
        let missing = try notes.run(["show", "zzzz"])
        #expect(missing.status == 3 && missing.errors.hasPrefix("ferry-notes: no note"))
        #expect(try notes.run(["ls", "--after", "nonsense"]).status == 64)
    }

    /// A title with terminal escapes (a collaborator's, say) prints as
    /// text in `ls`, `show` and `search`: no colour, no window title, no
    /// clipboard write.
    @Test func controlCharactersInANoteArePrintedNotObeyed() async throws {
        let notes = device("escapes")
        let token = "x.\(Data("{\"sub\":\"alice\"}".utf8).base64EncodedString()).y"
        _ = try notes.ok(["login", "--server", "http://127.0.0.1:9", "--token", token])
        let id = try notes.ok(["add", "Evil \u{1B}[31mRED\u{1B}[0m \u{1B}]0;pwned-title\u{07} title", "--body", "body \u{1B}]52;c;aGk=\u{07}"])
        for arguments in [["ls"], ["show", id], ["search", "title"]] {
            let result = try notes.run(arguments)
            #expect(result.status == 0, "\(result)")
            #expect(!result.output.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 }, "\(arguments): \(result.output)")
            #expect(result.output.contains("^[[31mRED"), "\(arguments): \(result.output)")
        }
    }

    @Test func anAmbiguousPrefixListsTheCandidates() async throws {
        let notes = device("prefix")
        let token = "x.\(Data("{\"sub\":\"alice\"}".utf8).base64EncodedString()).y"
        _ = try notes.ok(["login", "--server", "http://127.0.0.1:9", "--token", token])
        var ids: [String] = []
        for index in 0..<40 { ids.append(try notes.ok(["add", "Note \(index)"])) }
        // Some first hex digit is shared by two of 40 random ids.
        let prefix = try #require(Dictionary(grouping: ids, by: { $0.prefix(1) }).first { $0.value.count > 1 }?.key)
        let result = try notes.run(["show", String(prefix)])
        #expect(result.status == 4, "\(result)")
        #expect(result.errors.contains("ambiguous"))
    }

    @Test func editWithNoFieldOpensTheEditorOnATerminal() async throws {
        let notes = device("editor")
        let token = "x.\(Data("{\"sub\":\"alice\"}".utf8).base64EncodedString()).y"
        _ = try notes.ok(["login", "--server", "http://127.0.0.1:9", "--token", token])
        let id = try notes.ok(["add", "Draft", "--body", "first line", "--tag", "a"])
        // An editor that rewrites the title and appends to the body.
        let editor = directory.url.appending(path: "editor.sh")
        try """
        #!/bin/sh
        sed -i -e 's/^Title: Draft$/Title: Final/' -e 's/^Tags: a$/Tags: a, b/' "$1"
        echo 'second line' >> "$1"
        """.write(to: editor, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: editor.path)
        // Not a terminal: refused with a clear message.
        let piped = try notes.run(["edit", id])
        #expect(piped.status == 64 && piped.errors.contains("$EDITOR"))
        // Through a pseudo-terminal (`script` allocates one).
        let binary = try NotesCLI.executable().path
        let process = Process()
        process.executableURL = URL(filePath: "/usr/bin/script")
        process.arguments = ["-qfec", "'\(binary)' edit \(id) --db '\(notes.database)'", "/dev/null"]
        process.environment = ProcessInfo.processInfo.environment.merging(["EDITOR": editor.path, "VISUAL": ""]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let shown = try notes.ok(["show", id, "--json"])
        #expect(shown.contains("\"title\" : \"Final\""), "\(shown)")
        #expect(shown.contains("first line\\nsecond line"), "\(shown)")
        #expect(shown.contains("\"b\""), "\(shown)")
    }
}

/// Attachments, `watch`, Markdown round trips and categories, through the binary.
@Suite(.serialized) struct NotesCLIMoreTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    func device(_ name: String) -> NotesCLI {
        NotesCLI(device: name, in: directory)
    }

    @Test func anAttachmentAddedOnOneDeviceOpensOnAnother() async throws {
        let server = try await NotesServer()
        defer { server.stop() }
        let token = try server.token("alice")
        let laptop = device("laptop"), phone = device("phone")
        for device in [laptop, phone] { _ = try device.ok(["login", "--server", server.url, "--token", token]) }
        let id = try laptop.ok(["add", "Receipt"])
        let scan = directory.url.appending(path: "scan.pdf")
        let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try bytes.write(to: scan)
        let attachment = try laptop.ok(["attach", id, scan.path])
        #expect(try laptop.ok(["attachments", id]).contains("not uploaded"))
        let synced = try laptop.ok(["sync", "--json"])
        #expect(synced.contains("\"attachmentsUploaded\" : 1"), "\(synced)")
        _ = try phone.ok(["sync"])
        #expect(try phone.ok(["attachments", id]).contains("on the server"))
        let copy = directory.url.appending(path: "copy.pdf")
        _ = try phone.ok(["open-attachment", String(attachment.prefix(6)), "--out", copy.path])
        #expect(try Data(contentsOf: copy) == bytes)
        let path = try phone.ok(["open-attachment", attachment])
        #expect(try Data(contentsOf: URL(filePath: path)) == bytes)
    }

    /// Offline from the first minute: notes (and a file attached to one)
    /// written before any `login` become the user's at sign-in and reach
    /// the server once at the first sync; after `logout` notes can still be
    /// written, and go at the next sign-in's sync.
    @Test func notesWrittenBeforeLoginAndAfterLogoutReachTheServer() async throws {
        let server = try await NotesServer()
        defer { server.stop() }
        let token = try server.token("alice")
        let laptop = device("fresh-laptop"), phone = device("fresh-phone")
        let early = try laptop.ok(["add", "Written on the train", "--body", "before any login", "--tag", "early"])
        #expect(try laptop.ok(["ls"]).contains("Written on the train"))
        let sketch = directory.url.appending(path: "sketch.png")
        try Data((0..<5_000).map { UInt8(truncatingIfNeeded: $0) }).write(to: sketch)
        _ = try laptop.ok(["attach", early, sketch.path])
        _ = try laptop.ok(["edit", early, "--append", "and edited"])
        // Notebooks live on a server: they wait for a sign-in, and say so.
        let notebook = try laptop.run(["notebook", "create", "Trip"])
        #expect(notebook.status == 5 && notebook.errors.contains("login"), "\(notebook)")
        #expect(try laptop.run(["sync"]).status == 5)

        _ = try laptop.ok(["login", "--server", server.url, "--token", token])
        #expect(try laptop.ok(["show", early]).contains("author    alice"))
        let first = try laptop.ok(["sync", "--json"])
        #expect(first.contains("\"attachmentsUploaded\" : 1"), "\(first)")
        _ = try laptop.ok(["logout"])
        let late = try laptop.ok(["add", "Written after logout"])
        _ = try laptop.ok(["login", "--server", server.url, "--token", token])
        _ = try laptop.ok(["sync"])

        _ = try phone.ok(["login", "--server", server.url, "--token", token])
        _ = try phone.ok(["sync"])
        let shown = try phone.ok(["show", early])
        #expect(shown.contains("before any login\nand edited") && shown.contains("author    alice"), "\(shown)")
        #expect(try phone.ok(["show", late]).contains("Written after logout"))
        #expect(try phone.ok(["attachments", early]).contains("sketch.png"))
        // Nothing refused, nothing left to send: the claimed notes went as inserts in alice's scope.
        let status = try laptop.ok(["status", "--json"])
        #expect(status.contains("\"rejectedChanges\" : 0") && status.contains("\"pendingChanges\" : 0"), "\(status)")
    }

    /// A bad sector in the notes table: commands that meet it say the file
    /// is damaged and how to recover; `export` saves every note still
    /// readable (unsynced ones too) and says how many records were lost;
    /// the recovery the message gives (move aside, log in, sync, import the
    /// saved notes keeping the server's copies) brings back every synced note.
    @Test func aDamagedDatabaseSaysHowToRecoverAndExportSavesWhatItCan() async throws {
        let server = try await NotesServer()
        defer { server.stop() }
        let token = try server.token("alice")
        let laptop = device("damaged")
        _ = try laptop.ok(["login", "--server", server.url, "--token", token])
        let lines = (0..<400).map { "{\"title\":\"synced \($0)\",\"body\":\"\(String(repeating: "b", count: 600))\"}" }
        try lines.joined(separator: "\n").write(toFile: directory.path("synced.jsonl"), atomically: true, encoding: .utf8)
        _ = try laptop.ok(["import", directory.path("synced.jsonl")])
        _ = try laptop.ok(["sync"])
        let unsynced = try (0..<40).map { try laptop.ok(["add", "unsynced \($0)", "--body", String(repeating: "u", count: 600)]) }
        try DamagedFile.destroyALeaf(ofTable: "note", in: laptop.database)
        // The newest notes live in the write-ahead log until a checkpoint: the salvage reads them too.
        let inTheLog = try (0..<5).map { try laptop.ok(["add", "in the log \($0)"]) }
        #expect(try Data(contentsOf: URL(filePath: laptop.database + "-wal")).count > 0)

        let listed = try laptop.run(["ls", "--limit", "1000"])
        #expect(listed.status == 1, "\(listed)")
        #expect(listed.errors.contains("is damaged (database disk image is malformed)"), "\(listed)")
        #expect(listed.errors.contains("`ferry-notes --db \(laptop.database) export --out saved.jsonl`"), "\(listed)")

        let saved = directory.path("saved.jsonl")
        let export = try laptop.run(["export", "--out", saved])
        #expect(export.status == 1, "some records were lost: \(export)")
        let savedLines = try String(contentsOfFile: saved, encoding: .utf8).split(separator: "\n")
        #expect(savedLines.count > 300 && savedLines.count < 440, "\(savedLines.count) saved")
        let lost = try #require(export.errors.firstMatch(of: /saved the (\d+) notes still readable to .*; damaged pages hid at most (\d+) more/), "\(export)")
        #expect(Int(lost.output.1) == savedLines.count && Int(lost.output.2)! > 0)
        #expect(Int(lost.output.1)! + Int(lost.output.2)! >= 445, "every note is saved or counted as lost")
        #expect(inTheLog.allSatisfy { id in savedLines.contains { $0.contains(id) } }, "the notes only in the log are saved")

        // The recovery, as the message gives it.
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: laptop.database + suffix) {
            try FileManager.default.moveItem(atPath: laptop.database + suffix, toPath: laptop.database + ".damaged" + suffix)
        }
        _ = try laptop.ok(["login", "--server", server.url, "--token", token])
        _ = try laptop.ok(["sync"])
        let savedUnsynced = savedLines.filter { $0.contains("\"title\":\"unsynced ") || $0.contains("\"title\":\"in the log ") }.count
        let imported = try laptop.ok(["import", "--keep-existing", saved])
        #expect(imported.hasSuffix("imported \(savedUnsynced) notes"), "only the notes the server never had: \(imported)")
        let restored = try laptop.ok(["export", "--out", "-"]).split(separator: "\n")
        #expect(restored.count == 400 + savedUnsynced && savedUnsynced > 0, "every synced note and every saved one")
        #expect((unsynced + inTheLog).filter { id in restored.contains { $0.contains(id) } }.count == savedUnsynced)
    }

    @Test func watchPrintsEachChangeAsItArrivesUntilInterrupted() async throws {
        let server = try await NotesServer()
        defer { server.stop() }
        let token = try server.token("alice")
        let watcher = device("watcher"), writer = device("writer")
        for device in [watcher, writer] { _ = try device.ok(["login", "--server", server.url, "--token", token]) }
        let process = Process()
        process.executableURL = try NotesCLI.executable()
        process.arguments = ["watch", "--db", watcher.database]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        let lines = LineCollector(), said = LineCollector()
        output.fileHandleForReading.readabilityHandler = { handle in lines.append(handle.availableData) }
        errors.fileHandleForReading.readabilityHandler = { handle in said.append(handle.availableData) }
        try process.run()
        defer {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            output.fileHandleForReading.readabilityHandler = nil
            errors.fileHandleForReading.readabilityHandler = nil
        }
        // Synced once and listening before anything changes.
        let ready = ContinuousClock.now + .seconds(20)
        while !said.text.contains("watching"), ContinuousClock.now < ready { try await Task.sleep(for: .milliseconds(50)) }
        #expect(said.text.contains("watching"), "\(said.text)")
        _ = try writer.ok(["add", "Live one"])
        _ = try writer.ok(["sync"])
        let deadline = ContinuousClock.now + .seconds(20)
        while !lines.text.contains("Live one"), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
        #expect(lines.text.contains("changed") && lines.text.contains("Live one"), "\(lines.text)")
        kill(process.processIdentifier, SIGINT)
        let stopBy = ContinuousClock.now + .seconds(10)
        while process.isRunning, ContinuousClock.now < stopBy { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!process.isRunning)
        #expect(process.isRunning || process.terminationStatus == 0)
    }

    #if os(Linux)
        /// `edit` with an editor that reads the terminal, in a real pseudo-
        /// terminal (`script`): the editor is the foreground job, so it reads
        /// instead of being stopped by the terminal; the file it edited is gone.
        @Test func theEditorHoldsTheTerminal() throws {
            let notes = device("tty")
            let token = "x.\(Data("{\"sub\":\"alice\"}".utf8).base64EncodedString()).y"
            _ = try notes.ok(["login", "--server", "http://127.0.0.1:9", "--token", token])
            let id = try notes.ok(["add", "Before"])
            let editor = directory.url.appending(path: "tty-editor.sh")
            try "#!/bin/sh\nread title < /dev/tty\nsed -i \"1s/.*/Title: $title/\" \"$1\"\n".write(to: editor, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: editor.path)
            let process = Process()
            process.executableURL = URL(filePath: "/usr/bin/script")
            let command = "EDITOR=\(editor.path) \(try NotesCLI.executable().path) edit --db \(notes.database) \(id)"
            process.arguments = ["-qec", command, "/dev/null"]
            let input = Pipe()
            process.standardInput = input
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            input.fileHandleForWriting.write(Data("From the terminal\n".utf8))
            let deadline = Date().addingTimeInterval(20)
            while process.isRunning, Date() < deadline { usleep(50_000) }
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "the editor did not get the terminal")
            #expect(try notes.ok(["show", id]).hasPrefix("From the terminal"))
        }
    #endif

    /// A change the server refuses (a note past its body limit) is named by
    /// `sync`, which exits 7; `rejected` lists it and drops it, and the
    /// next sync is clean.
    @Test func aRefusedChangeIsNamedAndCanBeDropped() async throws {
        let server = try await NotesServer()
        defer { server.stop() }
        let notes = device("refused")
        _ = try notes.ok(["login", "--server", server.url, "--token", try server.token("alice")])
        let big = directory.url.appending(path: "big.txt")
        try String(repeating: "a line of a very long note\n", count: 200_000).write(to: big, atomically: true, encoding: .utf8)
        let id = try notes.ok(["add", "Big", "--body-file", big.path])
        _ = try notes.ok(["add", "Small"])
        let sync = try notes.run(["sync"])
        #expect(sync.status == 7, "\(sync)")
        #expect(sync.errors.contains("the server refused 1 change") && sync.errors.contains(String(id.prefix(8))), "\(sync.errors)")
        // The library's own warning about it goes to the log beside the database, not among the command's lines.
        #expect(!sync.errors.contains("warning") && !sync.errors.contains("ferry.sync"), "\(sync.errors)")
        let log = try String(contentsOfFile: notes.database + ".log", encoding: .utf8)
        #expect(log.contains("warning ferry.sync: ") && log.contains("a mutation was set aside"), "\(log)")
        let listed = try notes.ok(["rejected"])
        #expect(listed.hasPrefix("1  note  \(id.prefix(8))"), "\(listed)")
        _ = try notes.ok(["rejected", "--discard", "1"])
        #expect(try notes.ok(["rejected"]) == "nothing refused")
        #expect(try notes.run(["sync"]).status == 0)
        #expect(try notes.run(["rejected", "--retry", "1"]).status == 3)
        // With --verbose, the library's lines go to standard error.
        _ = try notes.ok(["add", "Big again", "--body-file", big.path])
        let verbose = try notes.run(["sync", "--verbose"])
        #expect(verbose.status == 7 && verbose.errors.contains("warning ferry.sync: ") && verbose.errors.contains("a mutation was set aside"), "\(verbose)")
    }

    /// A token's life bounds the live stream: `watch` stops when its token
    /// expires and says to log in again, with the exit code for a refusal.
    @Test func watchStopsAndSaysToLogInAgainWhenItsTokenExpires() async throws {
        let server = try await NotesServer()
        defer { server.stop() }
        let watcher = device("expiring")
        _ = try watcher.ok(["login", "--server", server.url, "--token", try server.token("alice", lifetime: "4s")])
        let process = Process()
        process.executableURL = try NotesCLI.executable()
        process.arguments = ["watch", "--db", watcher.database]
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        let said = LineCollector()
        errors.fileHandleForReading.readabilityHandler = { handle in said.append(handle.availableData) }
        try process.run()
        defer {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            errors.fileHandleForReading.readabilityHandler = nil
        }
        let stopBy = ContinuousClock.now + .seconds(40)
        while process.isRunning, ContinuousClock.now < stopBy { try await Task.sleep(for: .milliseconds(100)) }
        #expect(!process.isRunning, "watch kept running past its token: \(said.text)")
        #expect(process.isRunning || process.terminationStatus == 7)
        #expect(said.text.contains("watching") && said.text.contains("log in again"), "\(said.text)")
    }

    @Test func markdownExportImportsBackAndCategoriesKeepTheirColour() async throws {
        let notes = device("markdown")
        let token = "x.\(Data("{\"sub\":\"alice\"}".utf8).base64EncodedString()).y"
        _ = try notes.ok(["login", "--server", "http://127.0.0.1:9", "--token", token])
        let id = try notes.ok([
            "add", "Title: with a colon, \"quotes\"", "--body", "line one\n---\nline three", "--category", "work",
            "--tag", "a b", "--tag", "ç",
        ])
        let gone = try notes.ok(["add", "Gone"])
        _ = try notes.ok(["rm", gone])
        _ = try notes.ok(["category", "color", "work", "#ff8800"])
        #expect(try notes.ok(["category", "ls"]) == "work  #ff8800")
        let folder = directory.url.appending(path: "md")
        _ = try notes.ok(["export", "--format", "markdown", "--out", folder.path])
        let other = device("imported")
        _ = try other.ok(["login", "--server", "http://127.0.0.1:9", "--token", token])
        #expect(try other.ok(["import", folder.path]) == "imported 2 notes")
        let original = try notes.ok(["show", id, "--json"]), copy = try other.ok(["show", id, "--json"])
        #expect(original == copy)
        #expect(try other.ok(["ls", "--deleted"]).contains("Gone"))
    }

    /// A category's colour set on one device survives another device that
    /// uses the same category name offline (on notes it imports): only a
    /// colour writes a category row, so no empty colour can win over it,
    /// and no conflict comes of it.
    @Test func aCategorysColourSurvivesAnotherDeviceUsingItsName() async throws {
        let server = try await NotesServer()
        defer { server.stop() }
        let token = try server.token("alice")
        let laptop = device("colour-laptop"), phone = device("colour-phone")
        for device in [laptop, phone] { _ = try device.ok(["login", "--server", server.url, "--token", token]) }
        _ = try laptop.ok(["add", "Plan", "--category", "work"])
        _ = try laptop.ok(["category", "color", "work", "#ff8800"])
        _ = try laptop.ok(["sync"])
        // The phone, not yet synced, imports notes in the same category, later.
        let file = directory.url.appending(path: "work.jsonl")
        try (0..<3).map { #"{"title":"Imported \#($0)","category":"work"}"# }.joined(separator: "\n")
            .write(to: file, atomically: true, encoding: .utf8)
        _ = try phone.ok(["import", file.path])
        #expect(try phone.ok(["category", "ls"]) == "work")
        for device in [phone, laptop, phone] { _ = try device.ok(["sync"]) }
        for device in [laptop, phone] {
            #expect(try device.ok(["category", "ls"]) == "work  #ff8800", "\(device.database)")
            #expect(try device.run(["conflicts"]).errors.contains("no conflicts"), "\(device.database)")
        }
    }
}

/// Bytes a child process printed, gathered as they come.
final class LineCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func append(_ chunk: Data) { lock.withLock { data.append(chunk) } }
    var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
}
