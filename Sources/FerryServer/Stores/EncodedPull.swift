import FerryProtocol
import Foundation
import NIOCore

/// A pull answer as the stores read it: each row's values kept as the JSON
/// bytes a page sends, cut straight out of the stored `cells` column, so a
/// page is read and written out without decoding and re-encoding every
/// cell. ``body()`` is the body `POST /v1/pull` sends, ``json()`` the same
/// as a string; ``decoded()`` is the same answer as values, for in-process
/// callers and tests.
///
/// ```swift
/// let answer = try await store.pullEncoded(request, userID: "alice", limit: 500)
/// let body = try answer.body()      // {"lastAppliedMutationID":3,"pages":[…]}
/// let response = try answer.decoded()
/// ```
public struct EncodedPullResponse: Sendable {
    public var lastAppliedMutationID: Int64
    public var pages: [EncodedPullPage]

    public init(lastAppliedMutationID: Int64, pages: [EncodedPullPage]) {
        self.lastAppliedMutationID = lastAppliedMutationID
        self.pages = pages
    }

    /// The rows in all pages.
    public var rowCount: Int { pages.reduce(0) { $0 + $1.rows.count } }

    /// The answer's JSON, as `JSONDecoder` reads a `PullResponse`.
    public func json() throws -> String {
        String(buffer: try body())
    }

    /// The answer's JSON as the bytes `POST /v1/pull` sends: written
    /// straight into one buffer, reserved for its rows before the first
    /// byte (notices and cursors may grow it once more).
    public func body() throws -> ByteBuffer {
        var out = ByteBuffer()
        out.reserveCapacity(pages.reduce(64) { $0 + $1.byteEstimate })
        out.writeStaticString("{\"lastAppliedMutationID\":")
        out.writeString(String(lastAppliedMutationID))
        out.writeStaticString(",\"pages\":[")
        for (index, page) in pages.enumerated() {
            if index > 0 { out.writeStaticString(",") }
            try page.write(to: &out)
        }
        out.writeStaticString("]}")
        return out
    }

    /// The answer with every row's values decoded.
    public func decoded() throws -> PullResponse {
        PullResponse(lastAppliedMutationID: lastAppliedMutationID, pages: try pages.map { try $0.decoded() })
    }
}

public struct EncodedPullPage: Sendable {
    public var scope: String
    public var rows: [EncodedRow]
    public var cursor: String
    public var hasMore: Bool
    public var reset: Bool
    /// The reset is because the store lost the history the cursor came from.
    public var lostHistory: Bool
    public var notices: [ConflictNotice]
    public var noticeCursor: String?
    public var settledNotices: [String]
    /// About how many rows a scope sent from scratch sends in all (see `PullPage.estimatedRows`).
    public var estimatedRows: Int?
    /// On a live page: the cursor it continues from (see `PullPage.after`).
    public var after: String?

    public init(
        scope: String, rows: [EncodedRow], cursor: String, hasMore: Bool, reset: Bool, lostHistory: Bool = false,
        notices: [ConflictNotice] = [], noticeCursor: String? = nil, settledNotices: [String] = [], estimatedRows: Int? = nil,
        after: String? = nil
    ) {
        self.scope = scope
        self.rows = rows
        self.cursor = cursor
        self.hasMore = hasMore
        self.reset = reset
        self.lostHistory = lostHistory
        self.notices = notices
        self.noticeCursor = noticeCursor
        self.settledNotices = settledNotices
        self.estimatedRows = estimatedRows
        self.after = after
    }

    /// About the bytes ``write(to:)`` writes, so a buffer grows once.
    var byteEstimate: Int {
        rows.reduce(256 + scope.utf8.count + cursor.utf8.count) { $0 + $1.byteEstimate }
    }

    func write(to out: inout ByteBuffer) throws {
        out.writeStaticString("{")
        if let after {
            out.writeStaticString("\"after\":")
            out.writeJSONString(after)
            out.writeStaticString(",")
        }
        out.writeStaticString("\"changes\":[")
        for (index, row) in rows.enumerated() {
            if index > 0 { out.writeStaticString(",") }
            row.write(to: &out)
        }
        out.writeStaticString("],\"cursor\":")
        out.writeJSONString(cursor)
        if let estimatedRows {
            out.writeStaticString(",\"estimatedRows\":")
            out.writeString(String(estimatedRows))
        }
        out.writeStaticString(hasMore ? ",\"hasMore\":true" : ",\"hasMore\":false")
        if lostHistory {
            out.writeStaticString(",\"lostHistory\":true")
        }
        if let noticeCursor {
            out.writeStaticString(",\"noticeCursor\":")
            out.writeJSONString(noticeCursor)
        }
        if !notices.isEmpty {
            out.writeStaticString(",\"notices\":")
            out.writeString(try StoreCoding.json(notices))
        }
        out.writeStaticString(reset ? ",\"reset\":true,\"scope\":" : ",\"reset\":false,\"scope\":")
        out.writeJSONString(scope)
        if !settledNotices.isEmpty {
            out.writeStaticString(",\"settledNotices\":[")
            for (index, id) in settledNotices.enumerated() {
                if index > 0 { out.writeStaticString(",") }
                out.writeJSONString(id)
            }
            out.writeStaticString("]")
        }
        out.writeStaticString("}")
    }

    func decoded() throws -> PullPage {
        PullPage(
            scope: scope, changes: try rows.map { try $0.decoded() }, cursor: cursor, hasMore: hasMore, reset: reset,
            lostHistory: lostHistory, notices: notices, noticeCursor: noticeCursor, settledNotices: settledNotices,
            estimatedRows: estimatedRows, after: after
        )
    }
}

/// One pulled row: its values as a JSON object, and the newest stamp among
/// its cells.
public struct EncodedRow: Sendable, Hashable {
    public var table: String
    public var rowID: String
    public var version: Int64
    public var deleted: Bool
    /// The values as a JSON object: `{"title":"Milk","count":2}`.
    public var values: String
    public var hlc: Int64?

    /// The first rows of a page query's answer that fit `limit` rows and
    /// `maxBytes` of cells (at least one), encoded, and whether more follow.
    static func page(_ stored: [PageQueryRow], limit: Int, maxBytes: Int) throws -> (rows: [EncodedRow], hasMore: Bool) {
        let kept = StoreCoding.pageLength(sizes: stored.lazy.map(\.cells.utf8.count), limit: limit, maxBytes: maxBytes)
        let rows = try stored.prefix(kept).map { row in
            try EncodedRow(table: row.table, rowID: row.rowID, version: row.version, deleted: row.deleted, cells: row.cells)
        }
        return (rows, stored.count > kept)
    }

    /// The row from its stored `cells` column.
    init(table: String, rowID: String, version: Int64, deleted: Bool, cells: String) throws {
        self.table = table
        self.rowID = rowID
        self.version = version
        self.deleted = deleted
        if let wire = WireValues(cells: cells) {
            values = wire.values
            hlc = wire.hlc
        } else {
            // Not in the layout `StoreCoding.cellsJSON` writes: decode and re-encode.
            let decoded = try StoreCoding.cells(cells)
            var out = "{"
            for (index, column) in decoded.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                JSONText.appendString(column, to: &out)
                out += ":"
                JSONText.appendValue(decoded[column]!.value, to: &out)
            }
            values = out + "}"
            hlc = decoded.values.map(\.hlc.rawValue).max()
        }
    }

    /// About the bytes ``write(to:)`` writes.
    var byteEstimate: Int {
        values.utf8.count + rowID.utf8.count + table.utf8.count + 96
    }

    func write(to out: inout ByteBuffer) {
        out.writeStaticString(deleted ? "{\"deleted\":true" : "{\"deleted\":false")
        if let hlc {
            out.writeStaticString(",\"hlc\":")
            out.writeDecimal(hlc)
        }
        out.writeStaticString(",\"rowID\":")
        out.writeJSONString(rowID)
        out.writeStaticString(",\"table\":")
        out.writeJSONString(table)
        out.writeStaticString(",\"values\":")
        out.writeString(values)
        out.writeStaticString(",\"version\":")
        out.writeDecimal(version)
        out.writeStaticString("}")
    }

    func decoded() throws -> RowChange {
        RowChange(
            table: table, rowID: rowID, version: version, deleted: deleted,
            values: try StoreCoding.decode([String: ColumnValue].self, from: values),
            hlc: hlc.map(HLCTimestamp.init(rawValue:))
        )
    }
}

/// The values JSON cut out of a `cells` column written by
/// ``StoreCoding/cellsJSON(_:)``, without decoding it: each cell is
/// `"<column>":{"clientID":"…","hlc":N,"value":V,"version":N}`, and `V` ends
/// where `,"version":` begins (those unescaped quotes cannot occur inside a
/// JSON string, and the tagged objects hold only a string). `nil` for any
/// other layout.
struct WireValues: Equatable {
    var values: String
    var hlc: Int64?

    init?(cells: String) {
        var cells = cells
        var hlc: Int64?
        // Over the string's own bytes (a stored column is native and contiguous): no copy, no generic compares;
        // the values written straight into the new string's storage (they are never longer than the cells).
        // The string keeps the cells' capacity: a page's rows live only while its answer is written.
        guard
            let values = try? cells.withUTF8({ bytes in
                try String(unsafeUninitializedCapacity: max(bytes.count, 1)) { out in
                    guard let cut = Self.cut(bytes, into: out) else { throw NotThisLayout() }
                    hlc = cut.hlc
                    return cut.count
                }
            })
        else { return nil }
        self.init(values: values, hlc: hlc)
    }

    private struct NotThisLayout: Error {}

    private init(values: String, hlc: Int64?) {
        self.values = values
        self.hlc = hlc
    }

    private static let clientKey = Array(":{\"clientID\":".utf8)
    private static let hlcKey = Array(",\"hlc\":".utf8)
    private static let valueKey = Array(",\"value\":".utf8)
    private static let versionKey = Array(",\"version\":".utf8)

    /// Writes the values of `bytes` into `out` (at least as long as
    /// `bytes`), returning how many bytes it wrote and the newest stamp.
    private static func cut(_ bytes: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableBufferPointer<UInt8>) -> (count: Int, hlc: Int64?)? {
        guard bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}"), out.count >= bytes.count else { return nil }
        var written = 0
        func write(_ byte: UInt8) {
            out[written] = byte
            written += 1
        }
        write(UInt8(ascii: "{"))
        var index = 1
        var newest: Int64?

        func matches(_ key: [UInt8], at position: Int) -> Bool {
            guard position + key.count <= bytes.count else { return false }
            for offset in key.indices where bytes[position + offset] != key[offset] { return false }
            return true
        }
        /// The end (exclusive) of the JSON string starting at `position`.
        func stringEnd(from position: Int) -> Int? {
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { return nil }
            var cursor = position + 1
            while cursor < bytes.count {
                switch bytes[cursor] {
                case UInt8(ascii: "\\"): cursor += 2
                case UInt8(ascii: "\""): return cursor + 1
                default: cursor += 1
                }
            }
            return nil
        }
        func append(_ range: Range<Int>) {
            UnsafeMutableBufferPointer(rebasing: out[written..<(written + range.count)])
                .update(fromContentsOf: UnsafeBufferPointer(rebasing: bytes[range]))
            written += range.count
        }

        while index < bytes.count - 1 {
            if written > 1 {
                guard bytes[index] == UInt8(ascii: ",") else { return nil }
                write(UInt8(ascii: ","))
                index += 1
            }
            guard let nameEnd = stringEnd(from: index), matches(clientKey, at: nameEnd),
                let clientEnd = stringEnd(from: nameEnd + clientKey.count), matches(hlcKey, at: clientEnd)
            else { return nil }
            append(index..<nameEnd)
            write(UInt8(ascii: ":"))
            var cursor = clientEnd + hlcKey.count
            let negative = cursor < bytes.count && bytes[cursor] == UInt8(ascii: "-")
            if negative { cursor += 1 }
            let digitsStart = cursor
            var magnitude: Int64 = 0
            while cursor < bytes.count, bytes[cursor] &- UInt8(ascii: "0") < 10 {
                let (times, overflow) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, carry) = times.addingReportingOverflow(Int64(bytes[cursor] &- UInt8(ascii: "0")))
                guard !overflow, !carry else { return nil }
                magnitude = sum
                cursor += 1
            }
            guard cursor > digitsStart, matches(valueKey, at: cursor) else { return nil }
            let stamp = negative ? -magnitude : magnitude
            newest = max(newest ?? stamp, stamp)
            let valueStart = cursor + valueKey.count
            // The value ends where `,"version":` begins: look only at commas.
            var valueEnd = valueStart
            while valueEnd < bytes.count, bytes[valueEnd] != UInt8(ascii: ",") || !matches(versionKey, at: valueEnd) { valueEnd += 1 }
            guard valueEnd > valueStart, valueEnd < bytes.count else { return nil }
            append(valueStart..<valueEnd)
            cursor = valueEnd + versionKey.count
            while cursor < bytes.count, bytes[cursor] &- UInt8(ascii: "0") < 10 { cursor += 1 }
            guard cursor < bytes.count, bytes[cursor] == UInt8(ascii: "}") else { return nil }
            index = cursor + 1
        }
        guard index == bytes.count - 1 else { return nil }
        write(UInt8(ascii: "}"))
        return (written, newest)
    }
}
