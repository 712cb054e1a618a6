import Foundation
import GRDB
import Testing

/// Damage done to a database file as a failing disk does it.
enum DamagedFile {
    /// Overwrites one leaf page of `table`'s b-tree (the middle child of
    /// its root) with 0xFF bytes, after moving the log into the file.
    static func destroyALeaf(ofTable table: String, in path: String) throws {
        let queue = try DatabaseQueue(path: path)
        let (root, pageSize) = try queue.inDatabase { db in
            _ = try Row.fetchAll(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            return (
                try #require(try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = ?", arguments: [table])),
                try #require(try Int.fetchOne(db, sql: "PRAGMA page_size"))
            )
        }
        try queue.close()
        let handle = try FileHandle(forUpdating: URL(filePath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64((root - 1) * pageSize))
        let page = [UInt8](try #require(try handle.read(upToCount: pageSize)))
        try #require(page[0] == 0x05, "the root of \(table) is an interior table page (the table spans several pages)")
        let cells = Int(page[3]) << 8 | Int(page[4])
        let pointer = 12 + 2 * (cells / 2)
        let cell = Int(page[pointer]) << 8 | Int(page[pointer + 1])
        let child = page[cell..<cell + 4].reduce(0) { $0 << 8 | Int($1) }
        try handle.seek(toOffset: UInt64((child - 1) * pageSize))
        try handle.write(contentsOf: Data(repeating: 0xFF, count: pageSize))
    }
}
