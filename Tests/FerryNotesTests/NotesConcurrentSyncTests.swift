import FerryTestSupport
import Foundation
import Testing

/// Several syncs of one database file at once — a timer, a manual
/// `ferry-notes sync`, `watch` — run one at a time: none fails with an
/// internal error, and nothing is lost or sent twice.
@Suite(.serialized) struct NotesConcurrentSyncTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    @Test func threeProcessesSyncingOneFileTakeTurns() async throws {
        let server = try await NotesServer()
        defer { server.stop() }
        let token = try server.token("alice")
        let laptop = NotesCLI(device: "laptop", in: directory)
        _ = try laptop.ok(["login", "--server", server.url, "--token", token])
        let lines = (0..<3000).map { index in
            "{\"id\":\"n\(String(format: "%05d", index))\",\"title\":\"Note \(index)\",\"body\":\"b\",\"tags\":[],\"created_at\":\(1_700_000_000_000 + index),\"updated_at\":\(1_700_000_000_000 + index)}"
        }
        let file = directory.url.appending(path: "notes.jsonl")
        try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        #expect(try laptop.ok(["import", file.path]) == "imported 3000 notes")

        // Three processes at once on the same file.
        let results = try await withThrowingTaskGroup(of: NotesCLI.Result.self) { group in
            for _ in 0..<3 {
                group.addTask { try laptop.run(["sync", "--json"]) }
            }
            var results: [NotesCLI.Result] = []
            for try await result in group { results.append(result) }
            return results
        }
        for result in results {
            #expect(result.status == 0, "\(result)")
            #expect(!result.errors.contains("not pending") && !result.errors.contains("outboxStateMismatch"), "\(result)")
        }
        // Every note went out once: one sync sent them all, the others found nothing to send.
        let pushed = results.compactMap { result in
            result.output.split(separator: "\n").first { $0.contains("\"pushed\"") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: ",")))) }
        }
        #expect(pushed.count == 3 && pushed.reduce(0, +) >= 3000, "\(results)")
        let status = try laptop.ok(["status", "--json"])
        #expect(status.contains("\"pendingChanges\" : 0"), "\(status)")

        let phone = NotesCLI(device: "phone", in: directory)
        _ = try phone.ok(["login", "--server", server.url, "--token", token])
        let synced = try phone.ok(["sync", "--json"])
        #expect(synced.contains("\"pulled\" : 3000"), "\(synced)")
        #expect(try phone.ok(["status", "--json"]).contains("\"notes\" : 3000"))
    }
}
