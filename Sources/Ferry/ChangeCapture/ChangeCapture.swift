import FerryProtocol
import FerrySQLite
import GRDB
import GRDBSQLite

/// The connection-side half of change capture: the SQL functions Ferry's
/// triggers call, and the guard that switches capture off while server
/// changes are applied.
///
/// `ferry_capturing()` answers whether writes are being captured;
/// `ferry_hlc()` stamps each captured edit. They are registered on the writer
/// connection, the only one that runs triggers. A connection without them
/// (the `sqlite3` shell, say) fails loudly on a write to a synced table
/// instead of writing a change that would never sync.
final class ChangeCapture: Sendable {
    let clock: EditClock
    /// How many guarded writes are in progress (nesting allowed).
    private let suspensions = Locked(0)

    init(clock: EditClock) {
        self.clock = clock
    }

    var isCapturing: Bool {
        suspensions.withLock { $0 == 0 }
    }

    /// Registers `ferry_capturing()` and `ferry_hlc()` on a connection.
    ///
    /// They run once per captured row, so they are plain C callbacks on the
    /// SQLite API rather than GRDB `DatabaseFunction`s, skipping GRDB's
    /// argument marshalling (a small saving; see BENCHMARKS.md).
    func register(on db: Database) throws {
        try define("ferry_capturing", on: db) { context, _, _ in
            let capture = Unmanaged<ChangeCapture>.fromOpaque(sqlite3_user_data(context)!).takeUnretainedValue()
            sqlite3_result_int(context, capture.isCapturing ? 1 : 0)
        }
        try define("ferry_hlc", on: db) { context, _, _ in
            let capture = Unmanaged<ChangeCapture>.fromOpaque(sqlite3_user_data(context)!).takeUnretainedValue()
            sqlite3_result_int64(context, capture.clock.tick().rawValue)
        }
    }

    private func define(
        _ name: String, on db: Database,
        _ body: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void
    ) throws {
        // The connection keeps `self` alive until it drops the function.
        let retained = Unmanaged.passRetained(self).toOpaque()
        let code = sqlite3_create_function_v2(
            db.sqliteConnection, name, 0, SQLITE_UTF8, retained, body, nil, nil,
            { pointer in if let pointer { Unmanaged<ChangeCapture>.fromOpaque(pointer).release() } })
        guard code == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "could not register \(name)()")
        }
    }

    /// Runs `body` with capture switched off: its writes record nothing.
    ///
    /// Only for writes that must not sync: applying server changes, and app
    /// migrations (every device runs the same migration).
    func withoutCapture<T>(_ body: () throws -> T) rethrows -> T {
        suspensions.withLock { $0 += 1 }
        defer { suspensions.withLock { $0 -= 1 } }
        return try body()
    }

    /// Makes the triggers of `layouts` exactly the ones in the database:
    /// creates missing ones, rewrites changed ones, drops Ferry triggers of
    /// tables no longer synced. Untouched when already up to date, so opening
    /// a database normally writes nothing.
    static func installTriggers(for layouts: [TableLayout], in db: Database) throws {
        let expected = layouts.flatMap(CaptureTriggers.definitions(for:))
        let installed = try Row.fetchAll(
            db,
            sql: """
                SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND substr(name, 1, ?) = ?
                """, arguments: [CaptureTriggers.namePrefix.count, CaptureTriggers.namePrefix]
        )
        .map { CaptureTriggers.Definition(name: $0["name"], sql: $0["sql"]) }
        let expectedSet = Set(expected)
        for trigger in installed where !expectedSet.contains(trigger) {
            try db.execute(sql: "DROP TRIGGER IF EXISTS \(SQLText.identifier(trigger.name))")
        }
        let installedSet = Set(installed)
        for trigger in expected where !installedSet.contains(trigger) {
            try db.execute(sql: trigger.sql)
        }
    }
}
