@testable import FerryServer
import FerryProtocol
import FerryTesting
import Foundation
import NIOCore
import Testing

/// The hand-written JSON of the push path says exactly what `JSONEncoder` says.
@Suite struct StoreCodingTests {
    static let texts = [
        "", "plain", "quote \" and backslash \\", "slash / stays", "line\nbreak\ttab\rreturn", "\u{0}\u{1}\u{1F}\u{7F}",
        "émoji 🚢 and ünïcödé", "\u{2028}\u{2029}", String(repeating: "long ", count: 200),
    ]
    static let values: [ColumnValue] =
        [
            .null, .integer(0), .integer(.min), .integer(.max), .real(0.1), .real(-0.0), .real(1e300), .real(.pi),
            .blob(Data()), .blob(Data([0, 1, 2, 250, 251, 255])),
        ] + texts.map(ColumnValue.text)

    func expected(_ value: some Encodable) throws -> String {
        try StoreCoding.json(value).replacingOccurrences(of: "\\/", with: "/")
    }

    @Test(arguments: values)
    func cellsAreEncodedAsJSONEncoderDoes(value: ColumnValue) throws {
        let cells = [
            "b": StoredCell(value: value, version: 7, hlc: HLCTimestamp(wallMilliseconds: 1_700_000_000_000, counter: 3), clientID: "alice:c1"),
            "a \"key\"": StoredCell(value: .text("x"), version: 1, hlc: .zero, clientID: "bob:\\c2"),
        ]
        let fast = StoreCoding.cellsJSON(cells)
        #expect(fast == (try expected(cells)))
        #expect(try StoreCoding.cells(fast) == cells)
    }

    @Test(arguments: [Int64.min, .min + 1, -1_000_000_007, -10, -9, -1, 0, 1, 9, 10, 99, 100, 117_656_722_145_280_000, .max - 1, .max])
    func integersAreWrittenAsStringSpellsThem(value: Int64) {
        var buffer = ByteBuffer()
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 20) { memory in
            var json = BoundedJSONWriter(memory: memory)
            json.writeDecimal(value)
            return json.count
        }
        #expect(Array(buffer.readableBytesView) == Array(String(value).utf8))
    }

    @Test func resultsAreEncodedAsJSONEncoderDoes() throws {
        let results = [
            MutationResult(mutationID: 1, status: .applied, version: 9),
            MutationResult(mutationID: 2, status: .merged, version: nil),
            MutationResult(mutationID: 3, status: .rejected, reason: "no / \"way\""),
            MutationResult(
                mutationID: 4, status: .conflict, version: 3,
                conflicts: [
                    Conflict(kind: .column, column: "t", base: "a", local: "b", server: "c", resolution: .keptServer)
                ]),
        ]
        for var result in results {
            for replayed in [false, true] {
                result.replayed = replayed
                #expect(try StoreCoding.resultJSON(result).replacingOccurrences(of: "\\/", with: "/") == (try expected(result)))
            }
        }
    }
    /// Rows appended as a store's page query appends them: table, row id, version, deleted, cells.
    static func rows(_ stored: [(String, String, Int64, Bool, String)]) throws -> EncodedRows {
        var rows = EncodedRows()
        for (table, rowID, version, deleted, cells) in stored {
            try rows.append(
                table: table, rowID: rowID, version: version, deleted: deleted, cells: cells, position: ChangePosition(major: version))
        }
        return rows
    }

    /// A page keeps the longest run of rows within its limits, and always
    /// its first row; a row past them is not written and only says that
    /// more follow. Notices are counted by the same rule
    /// (`StoreCoding.pageLength`).
    @Test(arguments: [(5, Int.max), (3, Int.max), (1, Int.max), (5, 150), (5, 1), (0, Int.max)])
    func aPageKeepsTheRowsThatFitItsLimits(limit: Int, maxBytes: Int) throws {
        let cells = (0..<5).map {
            StoreCoding.cellsJSON(["t": StoredCell(value: .text(String(repeating: "x", count: 10 * $0)), version: Int64($0), hlc: .zero, clientID: "c")])
        }
        let all = try Self.rows(cells.enumerated().map { ("note", "r\($0.offset)", Int64($0.offset + 1), false, $0.element) })
        var rows = EncodedRows(limit: limit, maxBytes: maxBytes)
        var accepted: [Bool] = []
        for (index, cell) in cells.enumerated() {
            accepted.append(
                try rows.append(
                    table: "note", rowID: "r\(index)", version: Int64(index + 1), deleted: false, cells: cell,
                    position: ChangePosition(major: Int64(index + 1))))
        }
        let sizes = cells.map(\.utf8.count)
        let kept = max(1, (0...cells.count).last { $0 <= limit && sizes.prefix($0).reduce(0, +) <= maxBytes } ?? 0)
        #expect(StoreCoding.pageLength(sizes: sizes, limit: limit, maxBytes: maxBytes) == kept)
        #expect(rows.count == kept && rows.hasMore == (kept < cells.count))
        #expect(accepted == cells.indices.map { $0 < kept })
        #expect(try rows.decoded() == Array(try all.decoded().prefix(kept)))
        #expect(rows.lastPosition == ChangePosition(major: Int64(kept)))
    }

    /// A page's values are cut out of the stored cells without decoding
    /// them, and say exactly what decoding them would.
    @Test(arguments: values)
    func pulledValuesAreCutOutOfTheCellsExactly(value: ColumnValue) throws {
        let cells = [
            "b": StoredCell(value: value, version: 7, hlc: HLCTimestamp(wallMilliseconds: 1_700_000_000_000, counter: 3), clientID: "alice:c1"),
            "a \"key\",\"version\":": StoredCell(value: .text(#"x","version":1}"#), version: 1, hlc: .zero, clientID: #"bob:\c2","hlc":"#),
            "c": StoredCell(value: .text("\\"), version: 9, hlc: HLCTimestamp(wallMilliseconds: 1_800_000_000_000, counter: 0), clientID: "c"),
        ]
        let wire = try #require(WireValues(cells: StoreCoding.cellsJSON(cells)))
        #expect(try StoreCoding.decode([String: ColumnValue].self, from: wire.values) == cells.mapValues(\.value))
        #expect(wire.hlc == cells.values.map(\.hlc.rawValue).max())
        let rows = try Self.rows([("note", "r\"1", 4, false, StoreCoding.cellsJSON(cells))])
        let change = try #require(try rows.decoded().first)
        #expect(
            change
                == RowChange(
                    table: "note", rowID: "r\"1", version: 4, deleted: false, values: cells.mapValues(\.value),
                    hlc: HLCTimestamp(rawValue: wire.hlc!)))
    }

    /// Cells damaged by one to three byte edits: the cut reads no byte
    /// outside them (the address sanitizer's business; here, no crash), and
    /// wherever the damaged cells still decode, the page says what decoding
    /// them says.
    @Test func damagedCellsAreCutAsTheyDecodeOrRefused() throws {
        var random = SplitMix64(seed: 34)
        let originals = Self.values.map { value in
            StoreCoding.cellsJSON([
                "b": StoredCell(value: value, version: 7, hlc: HLCTimestamp(rawValue: 123_456), clientID: "alice:c1"),
                // Four edits apart from "b": three cannot make the two names one (a repeated key decodes to one cell).
                "alpha": StoredCell(value: .integer(5), version: 70, hlc: HLCTimestamp(rawValue: -9), clientID: "b"),
            ])
        }
        let alphabet = Array(#"{}[]",:\0123456789-aehilnrstuv "#.utf8)
        var decodedCount = 0
        for round in 0..<20_000 {
            var bytes = Array(originals[round % originals.count].utf8)
            for _ in 0..<(1 + Int(random.next() % 3)) where !bytes.isEmpty {
                let at = Int(random.next() % UInt64(bytes.count))
                let byte = alphabet[Int(random.next() % UInt64(alphabet.count))]
                switch random.next() % 3 {
                case 0: bytes[at] = byte
                case 1: bytes.insert(byte, at: at)
                default: bytes.remove(at: at)
                }
            }
            let damaged = String(decoding: bytes, as: UTF8.self)
            var rows = EncodedRows()
            let appended = (try? rows.append(table: "t", rowID: "r", version: 1, deleted: false, cells: damaged, position: .start)) != nil
            guard let cells = try? StoreCoding.cells(damaged) else { continue }
            decodedCount += 1
            #expect(appended, "\(damaged)")
            let change = try rows.decoded().first
            #expect(change?.values == cells.mapValues(\.value), "\(damaged)")
            #expect(change?.hlc?.rawValue == cells.values.map(\.hlc.rawValue).max(), "\(damaged)")
        }
        // Enough edits leave the cells readable (a digit for a digit, a space) for the comparison to mean something.
        #expect(decodedCount > 500)
    }

    @Test func otherLayoutsAreDecodedInstead() throws {
        #expect(WireValues(cells: "{}") == WireValues(cells: "{}"))
        #expect(WireValues(cells: "{}")?.values == "{}" && WireValues(cells: "{}")?.hlc == nil)
        let reordered = #"{"t":{"value":"x","clientID":"c","hlc":5,"version":2}}"#
        #expect(WireValues(cells: reordered) == nil)
        let rows = try Self.rows([("note", "r", 2, false, reordered)])
        #expect(String(buffer: rows.bytes) == #"{"deleted":false,"hlc":5,"rowID":"r","table":"note","values":{"t":"x"},"version":2}"#)
        for broken in ["", "{", #"{"t":{"clientID":"c","hlc":5,"value":"x","version":2}"#, #"{"t":{"clientID":"c","hlc":x,"value":"x","version":2}}"#] {
            #expect(WireValues(cells: broken) == nil, "\(broken)")
        }
    }

    /// A whole pull answer written by hand reads back as `JSONDecoder` reads it.
    @Test func anEncodedAnswerDecodesToTheSameResponse() throws {
        let cells = StoreCoding.cellsJSON(["t": StoredCell(value: .real(1.5), version: 3, hlc: HLCTimestamp(rawValue: 99), clientID: "c")])
        let answer = EncodedPullResponse(
            lastAppliedMutationID: 7,
            pages: [
                EncodedPullPage(
                    scope: "user:alice",
                    rows: try Self.rows([("note", "r", 3, false, cells), ("note", "gone", 4, true, "{}")]),
                    cursor: "c\u{1}ursor", hasMore: true, reset: false,
                    notices: [
                        ConflictNotice(
                            id: "e/1", table: "note", rowID: "r",
                            conflict: Conflict(kind: .column, column: "t", base: nil, local: "x", server: "y", resolution: .keptServer),
                            row: nil, overriddenBy: "bob", policy: .lastWriteWins)
                    ],
                    noticeCursor: "e/0.1"
                ),
                EncodedPullPage(scope: "team:x", rows: EncodedRows(), cursor: "d", hasMore: false, reset: true),
                EncodedPullPage(
                    scope: "team:\"q\"", rows: try Self.rows([("t\\1", "line\nbreak", 9, false, cells)]),
                    cursor: "e", hasMore: false, reset: false, lostHistory: true, settledNotices: ["n\"1", "n2"], estimatedRows: 12,
                    after: "a\tb"),
            ])
        let read = try JSONDecoder().decode(PullResponse.self, from: Data(try answer.json().utf8))
        // The bytes themselves, for the page with every optional field and every kind of escape.
        let last = EncodedPullResponse(lastAppliedMutationID: 7, pages: [answer.pages[2]])
        #expect(
            String(buffer: try last.body())
                == #"{"lastAppliedMutationID":7,"pages":[{"after":"a\tb","changes":[{"deleted":false,"hlc":99,"rowID":"line\nbreak","table":"t\\1","values":{"t":{"real":"1.5"}},"version":9}],"cursor":"e","estimatedRows":12,"hasMore":false,"lostHistory":true,"reset":false,"scope":"team:\"q\"","settledNotices":["n\"1","n2"]}]}"#
        )
        #expect(read == (try answer.decoded()))
        #expect(read.pages[0].changes[0].values == ["t": .real(1.5)] && read.pages[0].changes[1].hlc == nil)
        #expect(read.pages[0].notices.count == 1 && read.pages[1].reset)
        #expect(read.pages[2].scope == "team:\"q\"" && read.pages[2].changes[0].rowID == "line\nbreak" && read.pages[2].after == "a\tb")
        #expect(read.pages[2].settledNotices == ["n\"1", "n2"] && read.pages[2].estimatedRows == 12 && read.pages[2].lostHistory)
    }
}
