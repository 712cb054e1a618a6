import FerryProtocol
import Foundation
import NIOCore

/// How stores write rows, history, results and conflicts as JSON text, and
/// cut pull pages: the same in every store, so they hold the same bytes.
package enum StoreCoding {
    package static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// A row's cells as JSON, as a string: what the stores write into their
    /// statements (``writeCellsJSON(_:into:)``). The same JSON `json(_:)`
    /// gives, but for the escaping of `/`.
    package static func cellsJSON(_ cells: [String: StoredCell]) -> String {
        var out = ByteBuffer()
        writeCellsJSON(cells, into: &out)
        return String(buffer: out)
    }

    /// A row's cells as JSON, straight into `out`: a store that sends a
    /// push's rows in one buffer makes no string per row.
    ///
    /// ```swift
    /// var out = ByteBuffer()
    /// StoreCoding.writeCellsJSON(row.cells, into: &out)
    /// ```
    package static func writeCellsJSON(_ cells: [String: StoredCell], into out: inout ByteBuffer) {
        let members = cells.sorted(by: { $0.key < $1.key })
        // What JSONText spells (strings with a byte to escape, reals, blobs) is spelled first, so that the
        // row's length is known before any of it is written; nil where the bytes go as they are.
        var length = 2
        func spell(_ text: String) -> String? {
            let literal = BoundedJSONWriter.spelled(text)
            length += literal?.utf8.count ?? text.utf8.count + 2
            return literal
        }
        let spelled = members.map { key, cell -> (key: String?, clientID: String?, value: String?) in
            length += BoundedJSONWriter.fixedPerCell
            let (key, clientID) = (spell(key), spell(cell.clientID))
            switch cell.value {
            case .null, .integer:
                length += 20
                return (key, clientID, nil)
            case .text(let text):
                return (key, clientID, spell(text))
            case .real, .blob:
                var literal = ""
                JSONText.appendValue(cell.value, to: &literal)
                length += literal.utf8.count
                return (key, clientID, literal)
            }
        }
        out.writeWithUnsafeMutableBytes(minimumWritableBytes: length) { memory in
            var json = BoundedJSONWriter(memory: memory)
            json.write("{")
            for (index, ((key, cell), literal)) in zip(members, spelled).enumerated() {
                if index > 0 { json.write(",") }
                json.writeString(key, spelled: literal.key)
                json.write(":{\"clientID\":")
                json.writeString(cell.clientID, spelled: literal.clientID)
                json.write(",\"hlc\":")
                json.writeDecimal(cell.hlc.rawValue)
                json.write(",\"value\":")
                switch cell.value {
                case .null: json.write("null")
                case .integer(let integer): json.writeDecimal(integer)
                case .text(let text): json.writeString(text, spelled: literal.value)
                case .real, .blob: json.writeRaw(literal.value!)
                }
                json.write(",\"version\":")
                json.writeDecimal(cell.version)
                json.write("}")
            }
            json.write("}")
            return json.count
        }
    }

    /// A result as JSON, written directly in the common case (no conflicts,
    /// no reason, no row); otherwise through `JSONEncoder`.
    package static func resultJSON(_ result: MutationResult) throws -> String {
        guard result.conflicts.isEmpty, result.reason == nil, result.row == nil else { return try json(result) }
        var out = ""
        appendPlainResult(result, to: &out)
        return out
    }

    /// A result without conflicts, reason or row, as ``resultJSON(_:)`` writes it, appended in
    /// place: interpolating a string for each result, then copying it into the answer, was a
    /// thirtieth of the server's share of a drain.
    private static func appendPlainResult(_ result: MutationResult, to out: inout String) {
        out += "{\"conflicts\":[],\"mutationID\":"
        out += String(result.mutationID)
        out += result.replayed ? ",\"replayed\":true,\"status\":\"" : ",\"replayed\":false,\"status\":\""
        out += result.status.rawValue
        if let version = result.version {
            out += "\",\"version\":"
            out += String(version)
            out += "}"
        } else {
            out += "\"}"
        }
    }

    /// A push answer as JSON, each result written as ``resultJSON(_:)`` writes it.
    package static func pushResponseJSON(_ response: PushResponse) throws -> String {
        var out = "{\"lastAppliedMutationID\":\(response.lastAppliedMutationID),\"results\":["
        out.reserveCapacity(response.results.count * 96 + 48)
        for (index, result) in response.results.enumerated() {
            if index > 0 { out += "," }
            if result.conflicts.isEmpty, result.reason == nil, result.row == nil {
                appendPlainResult(result, to: &out)
            } else {
                out += try json(result)
            }
        }
        out += "]"
        if let covered = response.covered {
            out += ",\"covered\":["
            for (index, scope) in covered.enumerated() {
                if index > 0 { out += "," }
                out += try json(scope)
            }
            out += "]"
        }
        out += "}"
        return out
    }

    package static func decode<T: Decodable>(_ type: T.Type, from json: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(json.utf8))
    }

    /// A row's `cells` column: per column, value, version, stamp and writer.
    package static func cells(_ json: String) throws -> [String: StoredCell] {
        try decode([String: StoredCell].self, from: json)
    }

    /// Whether an item (a row's cells, a notice) of `size` bytes joins a
    /// page that holds `count` items of `bytes` in all, within `limit`
    /// items and `maxBytes`: the first always does, so a page always
    /// advances. The one rule for rows (``EncodedRows``) and notices.
    package static func pageAdmits(_ size: Int, after count: Int, bytes: Int, limit: Int, maxBytes: Int) -> Bool {
        count == 0 || (count < limit && bytes + size <= maxBytes)
    }

    /// How many of a page's items, of these JSON sizes, it holds by
    /// ``pageAdmits(_:after:bytes:limit:maxBytes:)``.
    package static func pageLength(sizes: some Sequence<Int>, limit: Int, maxBytes: Int) -> Int {
        var kept = 0
        var bytes = 0
        for size in sizes {
            guard pageAdmits(size, after: kept, bytes: bytes, limit: limit, maxBytes: maxBytes) else { break }
            bytes += size
            kept += 1
        }
        return kept
    }
}
