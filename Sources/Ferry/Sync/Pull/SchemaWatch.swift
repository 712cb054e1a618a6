import Foundation
import GRDB

/// Notices when an app migration added a synced table or column since the
/// last sync, and restarts every scope's pull from scratch so the values the
/// server already holds for it arrive.
enum SchemaWatch {
    /// Returns whether a refetch was started.
    @discardableResult
    static func refetchIfGrown(_ layouts: [String: TableLayout], in db: Database) throws -> Bool {
        let current = layouts.mapValues { $0.columns.sorted() }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let text = String(decoding: try encoder.encode(current), as: UTF8.self)
        let stored: String? = try FerryMeta.value(.syncedColumns, in: db)
        guard stored != text else { return false }
        try FerryMeta.setValue(text, for: .syncedColumns, in: db)
        guard let stored, let previous = try? JSONDecoder().decode([String: [String]].self, from: Data(stored.utf8)) else {
            return false
        }
        let grown = current.contains { table, columns in
            guard let before = previous[table] else { return true }
            return !Set(columns).isSubset(of: Set(before))
        }
        if grown {
            // As after a reset: from scratch, with the sweep at the end, so
            // rows deleted on the server meanwhile go too.
            try ScopeCursorRecord.startOver(nil, db)
        }
        return grown
    }
}
