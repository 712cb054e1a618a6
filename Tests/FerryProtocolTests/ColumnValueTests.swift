import FerryProtocol
import Foundation
import PropertyBased
import Testing

@Suite struct ColumnValueTests {
    static func roundTrip<T: Codable>(_ value: T) throws -> T {
        try JSONDecoder().decode(T.self, from: JSONEncoder().encode(value))
    }

    /// Every SQLite value: integers over the whole Int64 range, reals from
    /// raw bit patterns (subnormals, infinities, -0.0; not NaN, which SQLite
    /// stores as NULL), text over all of Unicode, blobs of any bytes.
    static let values = Gen.oneOf(
        Gen.int64().map { ColumnValue.integer($0) },
        Gen.uint64().map { bits -> ColumnValue in
            let value = Double(bitPattern: bits)
            return .real(value.isNaN ? -0.0 : value)
        },
        Gen.uint32(in: 0...0x10FFFF).map { Unicode.Scalar($0) ?? "\u{FFFD}" }.array(of: 0...24).map { scalars -> ColumnValue in
            var text = ""
            text.unicodeScalars.append(contentsOf: scalars)
            return .text(text)
        },
        Gen.uint8().array(of: 0...64).map { ColumnValue.blob(Data($0)) },
        Gen.int64(in: 0...0).map { _ in ColumnValue.null }
    )

    @Test func everyValueRoundTripsThroughJSON() async {
        await propertyCheck(count: 3000, input: Self.values) { value in
            #expect((try? Self.roundTrip(value)) == value)
        }
    }

    @Test func rowsOfValuesRoundTripThroughJSON() async {
        await propertyCheck(count: 300, input: Self.values.array(of: 0...12)) { values in
            let row = Dictionary(uniqueKeysWithValues: values.enumerated().map { ("c\($0.offset)", $0.element) })
            #expect((try? Self.roundTrip(row)) == row)
        }
    }

    @Test(arguments: [
        ColumnValue.null, .integer(.min), .integer(.max), .integer(0), .integer(-1),
        .real(-0.0), .real(0.0), .real(.leastNonzeroMagnitude), .real(-.leastNormalMagnitude),
        .real(.greatestFiniteMagnitude), .real(.infinity), .real(-.infinity), .real(0.1), .real(1),
        .text(""), .text("\u{0}nul inside"), .text("é"), .text("e\u{301}"), .text("👩‍👩‍👧 \u{10FFFF}"),
        .blob(Data()), .blob(Data([0, 255, 0x22, 0x5C])),
    ])
    func edgeValuesRoundTrip(value: ColumnValue) throws {
        #expect(try Self.roundTrip(value) == value)
    }

    @Test func equalityIsExactLikeSQLite() {
        #expect(ColumnValue.real(-0.0) != .real(0.0))
        #expect(ColumnValue.integer(1) != .real(1))
        #expect(ColumnValue.text("é") != .text("e\u{301}"))
        #expect(ColumnValue.text("1") != .integer(1))
        #expect(Set<ColumnValue>([.real(-0.0), .real(0.0), .text("é"), .text("e\u{301}")]).count == 4)
    }

    @Test func jsonFormIsReadable() throws {
        let row: [String: ColumnValue] = ["a": .null, "b": 42, "c": "x", "d": .real(1.5), "e": .blob(Data([1, 2]))]
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(row), as: UTF8.self)
        #expect(json == #"{"a":null,"b":42,"c":"x","d":{"real":"1.5"},"e":{"blob":"AQI="}}"#)
    }

    @Test(arguments: [
        "1.5", "1.0000000000000001", "1e400", "9223372036854775808", "-9223372036854775809", "true", "[1]", "{}",
        #"{"real":"abc"}"#, #"{"real":"nan"}"#, #"{"blob":"***"}"#, #"{"real":"1","blob":"AA=="}"#, #"{"other":1}"#,
    ])
    func malformedValuesAreRefused(json: String) {
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(ColumnValue.self, from: Data(json.utf8))
        }
    }

    @Test func conflictKeepsNullApartFromAbsent() throws {
        let conflict = Conflict(kind: .column, column: "title", base: .null, local: "a", server: nil, resolution: .keptServer)
        let decoded = try Self.roundTrip(conflict)
        #expect(decoded == conflict)
        #expect(decoded.base == .some(.null))
        #expect(decoded.server == nil)
    }
}
