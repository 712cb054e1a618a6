import FerryTestSupport
import Foundation
import Testing

/// The server loses data — its data directory restored from a backup or
/// deleted, its PostgreSQL database restored from a `pg_dump` — and the
/// notes are put back by the devices that hold them, never deleted from them.
@Suite(.postgresTurns, .serialized) struct NotesLostServerTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    func device(_ name: String) -> NotesCLI {
        NotesCLI(device: name, in: directory)
    }

    /// Where one store's data lives, and how it is backed up and restored.
    struct Store {
        var kind: StoreKind
        var data: TemporaryDirectory
        var databases: [PostgresTestDatabase] = []
        var directory: TemporaryDirectory

        var arguments: [String] { databases.last.map { ["--postgres", $0.url] } ?? [] }

        var backup: URL { directory.url.appending(path: "backup") }
        var dataDirectory: URL { data.url.appending(path: "data") }

        /// Takes a backup of the stopped server's data.
        func backUp() throws {
            if let database = databases.last {
                try database.pgDump(to: directory.path("backup.sql"))
            } else {
                try? FileManager.default.removeItem(at: backup)
                try FileManager.default.copyItem(at: dataDirectory, to: backup)
            }
        }

        /// Restores the backup: the data directory put back, or the dump loaded into a fresh database.
        mutating func restore() async throws {
            if kind == .postgres {
                let fresh = try await PostgresTestDatabase.create()
                databases.append(fresh)
                try fresh.load(dump: directory.path("backup.sql"))
            } else {
                try FileManager.default.removeItem(at: dataDirectory)
                try FileManager.default.copyItem(at: backup, to: dataDirectory)
            }
        }

        /// Loses everything: the data directory deleted, or a fresh empty database.
        mutating func lose() async throws {
            if kind == .postgres {
                databases.append(try await PostgresTestDatabase.create())
            } else {
                try FileManager.default.removeItem(at: dataDirectory)
            }
        }
    }

    /// Every device lists every title.
    func expect(_ titles: [String], on devices: [NotesCLI]) throws {
        for device in devices {
            let listing = try device.ok(["ls"])
            for title in titles { #expect(listing.contains(title), "\(device.database): \(listing)") }
        }
    }

    @Test(arguments: StoreKind.available)
    func notesTheServerLostComeBackFromTheDevices(_ kind: StoreKind) async throws {
        var store = Store(kind: kind, data: try TemporaryDirectory(), directory: directory)
        if kind == .postgres { store.databases.append(try await PostgresTestDatabase.create()) }
        defer { for database in store.databases { database.dropAtEnd() } }

        var server = try await NotesServer(arguments: store.arguments, dataDirectory: store.data)
        let port = server.port
        let token = try server.token("alice")
        let laptop = device("laptop"), phone = device("phone")
        for device in [laptop, phone] { _ = try device.ok(["login", "--server", server.url, "--token", token]) }
        _ = try laptop.ok(["add", "Before the backup", "--body", "kept in the backup"])
        _ = try laptop.ok(["sync"])
        _ = try phone.ok(["sync"])
        server.stop()
        try store.backUp()

        server = try await NotesServer(arguments: store.arguments, dataDirectory: store.data, port: port)
        _ = try laptop.ok(["add", "After the backup, on the laptop"])
        _ = try phone.ok(["add", "After the backup, on the phone"])
        for device in [laptop, phone, laptop] { _ = try device.ok(["sync"]) }
        server.stop()
        try await store.restore()

        server = try await NotesServer(arguments: store.arguments, dataDirectory: store.data, port: port)
        let titles = ["Before the backup", "After the backup, on the laptop", "After the backup, on the phone"]
        let phoneSync = try phone.run(["sync"])
        #expect(phoneSync.status == 0 && phoneSync.errors.contains("the server had lost 2 changes"), "\(phoneSync)")
        for device in [laptop, phone] { _ = try device.ok(["sync"]) }
        let tablet = device("tablet")
        _ = try tablet.ok(["login", "--server", server.url, "--token", token])
        _ = try tablet.ok(["sync"])
        try expect(titles, on: [laptop, phone, tablet])
        server.stop()

        // Everything lost: the laptop puts it all back.
        try await store.lose()
        server = try await NotesServer(arguments: store.arguments, dataDirectory: store.data, port: port)
        defer { server.stop() }
        let laptopSync = try laptop.run(["sync"])
        #expect(laptopSync.status == 0 && laptopSync.errors.contains("this device sent them back"), "\(laptopSync)")
        _ = try phone.ok(["sync"])
        let desktop = device("desktop")
        _ = try desktop.ok(["login", "--server", server.url, "--token", token])
        _ = try desktop.ok(["sync"])
        try expect(titles, on: [laptop, phone, desktop])
    }
}
