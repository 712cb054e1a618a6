@testable import FerryServer
import FerryProtocol
import Foundation
import Testing

/// The hand-written JSON of the push path says exactly what `JSONEncoder` says.
@Suite struct StoreCodingTests {
    static let texts = [
        "", "plain", "quote \" and backslash \\", "slash / stays", "line\nbreak\ttab\rreturn", "\u{0}\u{1}\u{1F}\u{7F}",
        "émoji 🚢 and ünïcödé", "\u{2028}\u{2029}", String(repeating: "long ", count: 200),
    ]
    static let values: [ColumnValue] = [
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

    @Test func resultsAreEncodedAsJSONEncoderDoes() throws {
        let results = [
            MutationResult(mutationID: 1, status: .applied, version: 9),
            MutationResult(mutationID: 2, status: .merged, version: nil),
            MutationResult(mutationID: 3, status: .rejected, reason: "no / \"way\""),
            MutationResult(mutationID: 4, status: .conflict, version: 3, conflicts: [
                Conflict(kind: .column, column: "t", base: "a", local: "b", server: "c", resolution: .keptServer),
            ]),
        ]
        for var result in results {
            for replayed in [false, true] {
                result.replayed = replayed
                #expect(try StoreCoding.resultJSON(result).replacingOccurrences(of: "\\/", with: "/") == (try expected(result)))
            }
        }
    }
}
