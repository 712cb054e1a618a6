@testable import FerryServer
import FerryProtocol
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
        buffer.writeDecimal(value)
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
        let row = try EncodedRow(table: "note", rowID: "r\"1", version: 4, deleted: false, cells: StoreCoding.cellsJSON(cells))
        var json = ByteBuffer()
        row.write(to: &json)
        let change = try JSONDecoder().decode(RowChange.self, from: Data(json.readableBytesView))
        #expect(
            change
                == RowChange(
                    table: "note", rowID: "r\"1", version: 4, deleted: false, values: cells.mapValues(\.value),
                    hlc: HLCTimestamp(rawValue: wire.hlc!)))
    }

    @Test func otherLayoutsAreDecodedInstead() throws {
        #expect(WireValues(cells: "{}") == WireValues(cells: "{}"))
        #expect(WireValues(cells: "{}")?.values == "{}" && WireValues(cells: "{}")?.hlc == nil)
        let reordered = #"{"t":{"value":"x","clientID":"c","hlc":5,"version":2}}"#
        #expect(WireValues(cells: reordered) == nil)
        let row = try EncodedRow(table: "note", rowID: "r", version: 2, deleted: false, cells: reordered)
        #expect(row.values == #"{"t":"x"}"# && row.hlc == 5)
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
                    rows: [
                        try EncodedRow(table: "note", rowID: "r", version: 3, deleted: false, cells: cells),
                        try EncodedRow(table: "note", rowID: "gone", version: 4, deleted: true, cells: "{}"),
                    ],
                    cursor: "c\u{1}ursor", hasMore: true, reset: false,
                    notices: [
                        ConflictNotice(
                            id: "e/1", table: "note", rowID: "r",
                            conflict: Conflict(kind: .column, column: "t", base: nil, local: "x", server: "y", resolution: .keptServer),
                            row: nil, overriddenBy: "bob", policy: .lastWriteWins)
                    ],
                    noticeCursor: "e/0.1"
                ),
                EncodedPullPage(scope: "team:x", rows: [], cursor: "d", hasMore: false, reset: true),
                EncodedPullPage(
                    scope: "team:\"q\"", rows: [try EncodedRow(table: "t\\1", rowID: "line\nbreak", version: 9, deleted: false, cells: cells)],
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
