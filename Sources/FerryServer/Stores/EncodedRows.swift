import FerryProtocol
import Foundation
import NIOCore

/// A page's rows as the JSON objects its `changes` array sends, written
/// into one buffer as the store's page query reads them: each row's values
/// cut straight out of its stored `cells` (`WireValues`), with no string,
/// row value or array per row.
///
/// The rows hold to the page's limits as they come: at most `limit` rows
/// and `maxBytes` bytes of cells, but always the first row, so a page
/// advances (`StoreCoding.pageAdmits(_:after:bytes:limit:maxBytes:)`). A
/// row past them is not written; it only tells that more follow
/// (``hasMore``), and the store's query stops there. A store's query reads
/// one row more than a page holds for that.
///
/// ```swift
/// var rows = EncodedRows(limit: 500, maxBytes: 8 << 20)
/// try rows.append(table: "note", rowID: "n1", version: 7, deleted: false, cells: cells, position: ChangePosition(major: 7))
/// rows.count          // 1
/// try rows.decoded()  // [RowChange(table: "note", rowID: "n1", version: 7, …)]
/// ```
public struct EncodedRows: Sendable {
    /// The rows' objects, comma-separated, as they stand inside `changes: [ … ]`.
    private(set) var bytes = ByteBuffer()
    public private(set) var count = 0
    /// A row was offered past the limits: the page has more to come.
    public private(set) var hasMore = false
    /// The place of the last row kept, in the store's change order.
    private(set) var lastPosition: ChangePosition?
    /// The bytes of cells of the rows kept: what the page's byte limit counts.
    private var cellBytes = 0
    private let limit: Int
    private let maxBytes: Int
    /// The values cut out of the row being written, before its object is.
    private var scratch: [UInt8] = []
    private let cutter = WireValues.Cutter()

    /// No rows yet, for a page of at most `limit` rows and `maxBytes`
    /// bytes of cells (at least one row).
    public init(limit: Int = .max, maxBytes: Int = .max) {
        self.limit = limit
        self.maxBytes = maxBytes
    }

    public var isEmpty: Bool { count == 0 }

    /// The bytes its buffers hold in memory, written or reserved.
    package var heldBytes: Int { bytes.capacity + scratch.capacity }

    /// Whether a row of `size` bytes of cells fits after the rows kept.
    private func fits(_ size: Int) -> Bool {
        StoreCoding.pageAdmits(size, after: count, bytes: cellBytes, limit: limit, maxBytes: maxBytes)
    }

    /// Appends a row from its stored columns, if it fits the page's
    /// limits; `false` when it does not (``hasMore``): the page is full, and
    /// the row is not written. `cells` in the layout
    /// `StoreCoding.cellsJSON(_:)` writes is cut without decoding; any
    /// other is decoded and its values written anew.
    ///
    /// - Throws: `DecodingError` for cells that are not JSON cells at all.
    @discardableResult
    package mutating func append(
        table: String, rowID: String, version: Int64, deleted: Bool, cells: String, position: ChangePosition
    ) throws -> Bool {
        var table = table, rowID = rowID, cells = cells
        return try table.withUTF8 { table in
            try rowID.withUTF8 { rowID in
                try cells.withUTF8 { cells in
                    try append(table: table, rowID: rowID, version: version, deleted: deleted, cells: cells, position: position)
                }
            }
        }
    }

    /// Appends a row from its stored columns' UTF-8 bytes (see
    /// `append(table:rowID:version:deleted:cells:position:)`), valid only
    /// during the call: a store hands them straight from its query.
    @discardableResult
    package mutating func append(
        table: UnsafeBufferPointer<UInt8>, rowID: UnsafeBufferPointer<UInt8>, version: Int64, deleted: Bool,
        cells: UnsafeBufferPointer<UInt8>, position: ChangePosition
    ) throws -> Bool {
        guard !hasMore, fits(cells.count) else {
            hasMore = true
            return false
        }
        if count == 0 {
            // Room for about the page the first row promises, within its byte limit (and 16 MiB): a buffer
            // that grows once or twice.
            bytes.reserveCapacity(min(min(limit, 1000) * (cells.count + 96), maxBytes / 2 + 65_536, 16 << 20))
        }
        // Never empty, so it always has an address (empty cells are not in the layout, and decode below).
        if scratch.count < max(cells.count, 1) { scratch = [UInt8](repeating: 0, count: max(cells.count, 2 * scratch.count, 256)) }
        let cut = scratch.withUnsafeMutableBufferPointer { out in cutter.cut(cells, into: out.baseAddress!) }
        if let cut {
            scratch.withUnsafeBufferPointer { values in
                write(
                    table: table, rowID: rowID, version: version, deleted: deleted,
                    values: UnsafeBufferPointer(rebasing: values[..<cut.count]), hlc: cut.hlc)
            }
        } else {
            // Not in the layout `StoreCoding.cellsJSON` writes: decode and write its values anew.
            let decoded = try StoreCoding.cells(String(decoding: cells, as: UTF8.self))
            var values = JSONText.object(decoded.mapValues(\.value))
            values.withUTF8 { values in
                write(
                    table: table, rowID: rowID, version: version, deleted: deleted, values: values,
                    hlc: decoded.values.map(\.hlc.rawValue).max())
            }
        }
        count += 1
        cellBytes += cells.count
        lastPosition = position
        return true
    }

    /// The rows as values.
    public func decoded() throws -> [RowChange] {
        var array = ByteBuffer()
        array.reserveCapacity(bytes.readableBytes + 2)
        array.writeStaticString("[")
        array.writeImmutableBuffer(bytes)
        array.writeStaticString("]")
        return try JSONDecoder().decode([RowChange].self, from: Data(array.readableBytesView))
    }

    /// One row's object, keys sorted as `JSONEncoder` sorts them:
    /// `{"deleted":…,"hlc":…,"rowID":…,"table":…,"values":{…},"version":…}`,
    /// after a comma unless it is the first.
    private mutating func write(
        table: UnsafeBufferPointer<UInt8>, rowID: UnsafeBufferPointer<UInt8>, version: Int64, deleted: Bool,
        values: UnsafeBufferPointer<UInt8>, hlc: Int64?
    ) {
        let first = count == 0
        guard let table = Self.plain(table), let rowID = Self.plain(rowID) else {
            // A name or id with a byte JSON escapes: written through the general string escaping.
            var escapedTable = "", escapedRowID = ""
            JSONText.appendString(String(decoding: table, as: UTF8.self), to: &escapedTable)
            JSONText.appendString(String(decoding: rowID, as: UTF8.self), to: &escapedRowID)
            escapedTable.withUTF8 { escapedTable in
                escapedRowID.withUTF8 { escapedRowID in
                    write(quotedTable: escapedTable, quotedRowID: escapedRowID, first: first, version: version, deleted: deleted, values: values, hlc: hlc)
                }
            }
            return
        }
        write(quotedTable: table, quotedRowID: rowID, first: first, version: version, deleted: deleted, values: values, hlc: hlc, quote: true)
    }

    /// `bytes` when no byte of them needs escaping in a JSON string.
    private static func plain(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>? {
        for byte in bytes where byte < 0x20 || byte == 0x22 || byte == 0x5C { return nil }
        return bytes
    }

    /// The row's object, its table and row id given as JSON strings
    /// (`quote`: their bare bytes, to be quoted here).
    private mutating func write(
        quotedTable table: UnsafeBufferPointer<UInt8>, quotedRowID rowID: UnsafeBufferPointer<UInt8>, first: Bool, version: Int64,
        deleted: Bool, values: UnsafeBufferPointer<UInt8>, hlc: Int64?, quote: Bool = false
    ) {
        let quotes = quote ? 2 : 0
        let most = 128 + table.count + rowID.count + 2 * quotes + values.count
        bytes.writeWithUnsafeMutableBytes(minimumWritableBytes: most) { raw in
            let out = raw.bindMemory(to: UInt8.self).baseAddress!
            var at = 0
            @inline(__always) func put(_ text: StaticString) {
                (out + at).update(from: text.utf8Start, count: text.utf8CodeUnitCount)
                at += text.utf8CodeUnitCount
            }
            @inline(__always) func put(_ bytes: UnsafeBufferPointer<UInt8>, quoted: Bool) {
                if quoted { out[at] = UInt8(ascii: "\""); at += 1 }
                if let base = bytes.baseAddress { (out + at).update(from: base, count: bytes.count) }
                at += bytes.count
                if quoted { out[at] = UInt8(ascii: "\""); at += 1 }
            }
            @inline(__always) func put(decimal value: Int64) {
                var magnitude = value.magnitude
                var digits = 1
                var rest = magnitude / 10
                while rest > 0 { digits += 1; rest /= 10 }
                if value < 0 { out[at] = UInt8(ascii: "-"); at += 1 }
                var index = at + digits
                at = index
                repeat {
                    index -= 1
                    out[index] = UInt8(truncatingIfNeeded: magnitude % 10) + 0x30
                    magnitude /= 10
                } while magnitude > 0
            }
            if !first { put(",") }
            put(deleted ? "{\"deleted\":true" : "{\"deleted\":false")
            if let hlc {
                put(",\"hlc\":")
                put(decimal: hlc)
            }
            put(",\"rowID\":")
            put(rowID, quoted: quote)
            put(",\"table\":")
            put(table, quoted: quote)
            put(",\"values\":")
            put(values, quoted: false)
            put(",\"version\":")
            put(decimal: version)
            put("}")
            return at
        }
    }
}
