import Foundation

/// How stores write rows, history, results and conflicts as JSON text, and
/// cut pull pages: the same in every store, so they hold the same bytes.
enum StoreCoding {
    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func decode<T: Decodable>(_ type: T.Type, from json: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(json.utf8))
    }

    /// A row's `cells` column: per column, value, version, stamp and writer.
    static func cells(_ json: String) throws -> [String: StoredCell] {
        try decode([String: StoredCell].self, from: json)
    }

    /// How many of a page's rows, of these JSON sizes, fit in `limit` rows
    /// and `maxBytes`: at least one, so a page always advances.
    static func pageLength(sizes: some Sequence<Int>, limit: Int, maxBytes: Int) -> Int {
        var kept = 0
        var bytes = 0
        for size in sizes.prefix(limit) {
            bytes += size
            if kept > 0, bytes > maxBytes { break }
            kept += 1
        }
        return kept
    }
}
