@testable import Ferry
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// `ferry-server backup` and `restore`, as an operator runs them against the
/// real server process: a backup taken while three devices push, more
/// writes, the backup restored, and every device converges with nothing
/// lost: the devices send back what the restored store lacks.
@Suite(.serialized) struct BackupCommandTests {
    static let secret = "backup-secret-0123456789abcdef-0123456789"

    static func serve(_ data: String) async throws -> (ServerProcess, URL) {
        let server = try ServerProcess(["serve", "--port", "0", "--data-dir", data, "--jwt-secret", secret])
        let line = try await server.waitForLine(startingWith: "Ferry server listening on ")
        return (server, try URL(string: String(line.dropFirst("Ferry server listening on ".count))).orThrow())
    }

    static func token(_ user: String, _ data: String) throws -> String {
        try ServerProcess.token(for: user, secret: secret, dataDirectory: data)
    }

    static func device(_ name: String, _ user: String, _ url: URL, _ data: String, _ directory: TemporaryDirectory) async throws -> Device {
        try await Device.make(name, user: user, baseURL: url, directory: directory, token: try token(user, data))
    }

    @Test func aBackupTakenWhileDevicesPushRestoresAndEveryDeviceConverges() async throws {
        let directory = try TemporaryDirectory()
        let data = directory.path("data")
        let backup = directory.path("backup.sqlite")
        let names = [("a1", "alice"), ("a2", "alice"), ("b1", "bob")]
        var (server, url) = try await Self.serve(data)
        defer { server.stop() }
        do {
            var devices: [Device] = []
            for (name, user) in names { devices.append(try await Self.device(name, user, url, data, directory)) }
            for (index, device) in devices.enumerated() {
                for row in 0..<1000 { try device.execute("INSERT INTO note(id, title) VALUES (?, ?)", ["\(names[index].0)-\(row)", "before"]) }
            }
            // Three devices push while the backup runs.
            let backedUp = try await withThrowingTaskGroup(of: String?.self) { group in
                for device in devices {
                    group.addTask {
                        _ = try await device.engine.sync(); return nil
                    }
                }
                group.addTask {
                    try await Task.sleep(for: .milliseconds(100))
                    let result = try ServerProcess.run(["backup", "--data-dir", data, "--to", backup])
                    #expect(result.status == 0, "\(result.output)")
                    return result.output
                }
                var output = ""
                for try await printed in group { if let printed { output = printed } }
                return output
            }
            #expect(backedUp.contains("backed up the store of \(data) at version"), "\(backedUp)")
            // One self-contained, consistent file: nothing beside it, every check passing.
            #expect(!FileManager.default.fileExists(atPath: backup + "-wal") && !FileManager.default.fileExists(atPath: backup + ".partial"))
            var readOnly = Configuration()
            readOnly.readonly = true
            let copy = try DatabaseQueue(path: backup, configuration: readOnly)
            let (integrity, journal) = try await copy.read { db in
                (try String.fetchOne(db, sql: "PRAGMA integrity_check"), try String.fetchOne(db, sql: "PRAGMA journal_mode"))
            }
            try copy.close()
            #expect(integrity == "ok" && journal == "delete")
            // More after the backup: these the restored store will lack.
            for (index, device) in devices.enumerated() {
                for row in 1000..<1100 { try device.execute("INSERT INTO note(id, title) VALUES (?, ?)", ["\(names[index].0)-\(row)", "after"]) }
                try device.execute("UPDATE note SET title = 'edited after' WHERE id = ?", ["\(names[index].0)-0"])
                _ = try await device.engine.sync()
            }
            // A running server's directory is not restored under it.
            let refused = try ServerProcess.run(["restore", "--data-dir", data, "--from", backup])
            #expect(refused.status != 0 && refused.output.contains("another ferry-server"), "\(refused.output)")
            // Nor is a file that is no backup.
            let notABackup = directory.path("not-a-backup")
            try Data("hello".utf8).write(to: URL(filePath: notABackup))
            server.stop()
            let bad = try ServerProcess.run(["restore", "--data-dir", data, "--from", notABackup])
            #expect(bad.status != 0 && bad.output.contains("is not a Ferry store backup"), "\(bad.output)")
        }

        let restored = try ServerProcess.run(["restore", "--data-dir", data, "--from", backup])
        #expect(restored.status == 0, "\(restored.output)")
        (server, url) = try await Self.serve(data)
        var devices: [Device] = []
        for (name, user) in names { devices.append(try await Self.device(name, user, url, data, directory)) }
        for _ in 0..<2 { for device in devices { _ = try await device.engine.sync() } }
        for (index, device) in devices.enumerated() {
            let notes = try device.notes()
            #expect(notes.count == (names[index].1 == "alice" ? 2200 : 1100), "\(names[index].0)")
            #expect(notes["\(names[index].0)-0"]?.title == "edited after")
            #expect(try device.database.outbox.pendingCount() == 0)
        }
        // A new device of each user receives everything from the refilled server.
        for user in ["alice", "bob"] {
            let fresh = try await Self.device("fresh-\(user)", user, url, data, directory)
            _ = try await fresh.engine.sync()
            #expect(try fresh.notes().count == (user == "alice" ? 2200 : 1100))
        }
    }
}
