@testable import Ferry
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// A child process writes rows and prints each committed change; it is killed
/// with SIGKILL at random moments. After every kill the file must be intact,
/// hold every change the child reported, and its outbox must match its data.
@Suite(.serialized) struct CrashSafetyTests {
    static let kills = 50

    @Test func killedWritersNeverLoseACommitOrSplitAChangeFromItsOutboxEntry() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("crash.sqlite")
        _ = try FerryDatabase(path: path, schema: ItemSchema.schema)

        var printedInserts = Set<String>()
        var printedRevision: [String: Int] = [:]
        var generator = SystemRandomNumberGenerator()
        for round in 1...Self.kills {
            let worker = try WorkerProcess(["crash-writer", path])
            // Let it commit a random number of changes, then kill it mid-stride.
            let waitFor = Int.random(in: 1...60, using: &generator)
            var lines: [String] = []
            while lines.count < waitFor, let line = worker.readLine() { lines.append(line) }
            worker.kill()
            lines += worker.readRemainingLines()
            #expect(worker.process.terminationReason == .uncaughtSignal, "round \(round): the worker exited on its own: \(lines.suffix(3))")

            for line in lines {
                let parts = line.split(separator: " ").map(String.init)
                switch parts.first {
                case "insert": printedInserts.insert(parts[1])
                case "update": printedRevision[parts[1]] = Int(parts[2])!
                default: Issue.record("round \(round): unexpected worker output \(line)")
                }
            }
            try check(path: path, printedInserts: printedInserts, printedRevision: printedRevision, round: round)
        }
        #expect(printedInserts.count >= Self.kills)
        #expect(!printedRevision.isEmpty)
    }

    func check(path: String, printedInserts: Set<String>, printedRevision: [String: Int], round: Int) throws {
        let database = try FerryDatabase(path: path, schema: ItemSchema.schema)
        try database.read { (db: Database) throws -> Void in
            #expect(try String.fetchAll(db, sql: "PRAGMA integrity_check") == ["ok"], "round \(round)")
            let revisions = try ItemSchema.revisions(db)
            let missing = printedInserts.subtracting(revisions.keys)
            #expect(missing.isEmpty, "round \(round): committed rows missing: \(missing)")
            for (id, revision) in printedRevision {
                #expect((revisions[id] ?? -1) >= revision, "round \(round): update \(id) to \(revision) lost")
            }
            // One insert entry per row and one update entry per revision: no change
            // without its entry, no entry without its change.
            let entries = try Row.fetchAll(db, sql: "SELECT row_id, op, count(*) AS n FROM ferry_outbox GROUP BY row_id, op")
            var inserts: [String: Int] = [:], updates: [String: Int] = [:]
            for entry in entries {
                let op: String = entry["op"]
                if op == "insert" {
                    inserts[entry["row_id"]] = entry["n"]
                } else if op == "update" {
                    updates[entry["row_id"]] = entry["n"]
                } else {
                    Issue.record("round \(round): unexpected \(op) entry")
                }
            }
            #expect(Set(inserts.keys) == Set(revisions.keys), "round \(round): rows and insert entries differ")
            #expect(inserts.values.allSatisfy { $0 == 1 }, "round \(round)")
            for (id, revision) in revisions {
                #expect(updates[id, default: 0] == revision, "round \(round): row \(id) at revision \(revision) has \(updates[id, default: 0]) update entries")
            }
        }
    }
}
