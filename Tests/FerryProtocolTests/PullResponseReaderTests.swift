import FerryProtocol
import FerryTesting
import Foundation
import Testing

/// ``PullResponseReader`` reads what `JSONDecoder` reads.
@Suite struct PullResponseReaderTests {
    /// Seeded answers with every kind of value (escapes, control characters,
    /// astral scalars, integers at their limits, reals at theirs, blobs),
    /// notices and optional fields, written compact and pretty.
    @Test(arguments: [1, 2, 3, 4] as [UInt64]) func itReadsWhatJSONDecoderReads(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        for _ in 0..<30 {
            let response = PullResponse(
                lastAppliedMutationID: Int64(bitPattern: random.next()),
                pages: (0..<Int(random.next() % 3)).map { _ in Self.page(&random) })
            for formatting in [[], [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]] as [JSONEncoder.OutputFormatting] {
                let encoder = JSONEncoder()
                encoder.outputFormatting = formatting
                let data = try encoder.encode(response)
                let read = try PullResponseReader.response(data)
                #expect(read == (try JSONDecoder().decode(PullResponse.self, from: data)))
                #expect(read == response)
            }
            if let page = response.pages.first {
                #expect(try PullResponseReader.page(JSONEncoder().encode(page)) == page)
            }
        }
    }

    /// A push's answer: results without conflicts or rows are read by the
    /// reader; one with either is declined, and `JSONDecoder` reads it.
    @Test(arguments: [1, 2, 3] as [UInt64]) func itReadsAPushAnswerAsJSONDecoderDoes(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        for _ in 0..<30 {
            let plain = (0..<Int(random.next() % 40)).map { index in
                MutationResult(
                    mutationID: Int64(index) + Int64(random.next() % 1000),
                    status: MutationResult.Status.allCases[Int(random.next() % 4)],
                    version: random.next() % 2 == 0 ? nil : Int64(bitPattern: random.next()),
                    reason: random.next() % 3 == 0 ? Self.text(&random) : nil,
                    replayed: random.next() % 2 == 0)
            }
            let covered = (0..<Int(random.next() % 3)).map { index in
                PushResponse.CoveredScope(
                    scope: "s\(index)", after: Self.text(&random), cursor: Self.text(&random),
                    emptyBefore: random.next() % 2 == 0 ? true : nil)
            }
            let response = PushResponse(
                lastAppliedMutationID: Int64(bitPattern: random.next()), results: plain,
                covered: random.next() % 3 == 0 ? nil : covered)
            for formatting in [[], [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]] as [JSONEncoder.OutputFormatting] {
                let encoder = JSONEncoder()
                encoder.outputFormatting = formatting
                let data = try encoder.encode(response)
                #expect(try PullResponseReader.pushResponse(data) == response)
            }

            var unusual = response
            let conflict = Conflict(kind: .column, column: "a", base: nil, local: .integer(1), server: .null, resolution: .keptServer)
            let row = ServerRow(version: 3, deleted: false, values: ["a": .text(Self.text(&random))])
            unusual.results.append(MutationResult(mutationID: 1, status: .conflict, version: 3, conflicts: [conflict], row: row))
            let data = try JSONEncoder().encode(unusual)
            #expect(throws: (any Error).self) { try PullResponseReader.pushResponse(data) }
            #expect(try PullResponseReader.decode(PushResponse.self, from: data) == unusual)
        }
        // An explicit null row, as a server may write it: read by the reader, as JSONDecoder reads it.
        let nullRow = Data(
            #"{"lastAppliedMutationID": 2, "results": [{"mutationID": 2, "status": "merged", "version": 9, "conflicts": [], "replayed": true, "row": null, "reason": null}]}"#
                .utf8)
        #expect(try PullResponseReader.pushResponse(nullRow) == JSONDecoder().decode(PushResponse.self, from: nullRow))
        // A result without `replayed`, or with an unknown status: JSONDecoder's error.
        for broken in [
            #"{"lastAppliedMutationID": 1, "results": [{"mutationID": 1, "status": "applied", "conflicts": []}]}"#,
            #"{"lastAppliedMutationID": 1, "results": [{"mutationID": 1, "status": "done", "conflicts": [], "replayed": false}]}"#,
        ] {
            #expect(throws: (any Error).self) { try PullResponseReader.decode(PushResponse.self, from: Data(broken.utf8)) }
        }
        // A result's key given twice, known or not: the reader declines it, and JSONDecoder (which keeps the first) decides.
        for twice in [
            #"{"lastAppliedMutationID": 1, "results": [{"mutationID": 1, "status": "applied", "conflicts": [], "replayed": false, "status": "merged"}]}"#,
            #"{"lastAppliedMutationID": 1, "results": [{"mutationID": 1, "x": 1, "status": "applied", "conflicts": [], "replayed": false, "x": 2}]}"#,
        ] {
            let data = Data(twice.utf8)
            #expect(throws: (any Error).self) { try PullResponseReader.pushResponse(data) }
            #expect(try PullResponseReader.decode(PushResponse.self, from: data) == JSONDecoder().decode(PushResponse.self, from: data))
        }
        // Another unknown key after one: read.
        let other = Data(#"{"lastAppliedMutationID": 1, "results": [{"x": 1, "mutationID": 1, "y": 2, "status": "applied", "conflicts": [], "replayed": false}]}"#.utf8)
        #expect(try PullResponseReader.pushResponse(other) == JSONDecoder().decode(PushResponse.self, from: other))
    }

    /// Bodies the reader declines go to `JSONDecoder`: the same answer, or its error.
    @Test func whatItDeclinesJSONDecoderDecides() throws {
        let unusual = #"""
            {"lastAppliedMutationID": 3.0e0, "extra": [1, {"x": null}],
             "pages": [{"sc\u006fpe": "user:a", "changes": [{"table": "n", "rowID": "r", "version": 7, "deleted": false,
                 "values": {"a": 2.0, "b": {"real": 1.5}, "c": {"real": "-0.0"}}, "hlc": null}],
               "cursor": "c", "hasMore": false, "reset": false, "notices": null, "settledNotices": null, "lostHistory": null}]}
            """#
        let data = Data(unusual.utf8)
        #expect(throws: (any Error).self) { try PullResponseReader.response(data) }
        let decoded = try PullResponseReader.decode(PullResponse.self, from: data)
        #expect(decoded == (try JSONDecoder().decode(PullResponse.self, from: data)))
        #expect(decoded.pages[0].changes[0].values["a"] == .integer(2))

        // A key given twice (JSONDecoder keeps the first), a bare real past Double's range: JSONDecoder decides.
        let twice = #"""
            {"lastAppliedMutationID": 1, "pages": [{"scope": "s", "scope": "t", "changes": [{"table": "n", "rowID": "r",
              "version": 1, "version": 2, "deleted": false, "values": {"a": 1, "a": 2}}], "cursor": "c", "hasMore": false, "reset": false}]}
            """#
        #expect(throws: (any Error).self) { try PullResponseReader.response(Data(twice.utf8)) }
        #expect(try PullResponseReader.decode(PullResponse.self, from: Data(twice.utf8)) == JSONDecoder().decode(PullResponse.self, from: Data(twice.utf8)))
        for real in ["1e400", "1e-400"] {
            let body = Data(
                #"{"lastAppliedMutationID": 1, "pages": [{"scope": "s", "changes": [{"table": "n", "rowID": "r", "version": 1, "deleted": false, "values": {"a": {"real": \#(real)}}}], "cursor": "c", "hasMore": false, "reset": false}]}"#
                    .utf8)
            #expect(throws: (any Error).self) { try JSONDecoder().decode(PullResponse.self, from: body) }
            #expect(throws: (any Error).self) { try PullResponseReader.decode(PullResponse.self, from: body) }
        }

        for broken in [#"{"lastAppliedMutationID": 1, "pages": [}"#, #"{"pages": []}"#, #"{"lastAppliedMutationID": 1, "pages": []} x"#] {
            #expect(throws: (any Error).self) { try PullResponseReader.decode(PullResponse.self, from: Data(broken.utf8)) }
        }
    }

    private static func page(_ random: inout SplitMix64) -> PullPage {
        let notices =
            random.next() % 4 == 0
            ? [
                ConflictNotice(
                    id: "e/\(random.next() % 100)", table: "note", rowID: "r",
                    conflict: Conflict(kind: .column, column: "t", base: nil, local: "x", server: value(&random), resolution: .keptServer),
                    row: nil, overriddenBy: "bob", policy: .lastWriteWins)
            ] : []
        return PullPage(
            scope: text(&random), changes: (0..<Int(random.next() % 6)).map { _ in row(&random) }, cursor: text(&random),
            hasMore: random.next() % 2 == 0, reset: random.next() % 5 == 0, lostHistory: random.next() % 7 == 0, notices: notices,
            noticeCursor: random.next() % 2 == 0 ? text(&random) : nil, settledNotices: random.next() % 3 == 0 ? [text(&random)] : [],
            estimatedRows: random.next() % 2 == 0 ? Int(random.next() % 1_000_000) : nil, after: random.next() % 2 == 0 ? text(&random) : nil)
    }

    private static func row(_ random: inout SplitMix64) -> RowChange {
        var values: [String: ColumnValue] = [:]
        for _ in 0..<Int(random.next() % 5) { values[text(&random)] = value(&random) }
        return RowChange(
            table: text(&random), rowID: text(&random), version: Int64(bitPattern: random.next()), deleted: random.next() % 4 == 0,
            values: values, hlc: random.next() % 3 == 0 ? nil : HLCTimestamp(rawValue: Int64(bitPattern: random.next())))
    }

    private static func value(_ random: inout SplitMix64) -> ColumnValue {
        switch random.next() % 9 {
        case 0: .null
        case 1: .integer([Int64.min, Int64.max, 0, -1][Int(random.next() % 4)])
        case 2: .integer(Int64(bitPattern: random.next()))
        case 3: .real([0.1, -0.0, .infinity, -.infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 1e-300][Int(random.next() % 7)])
        case 4: .real(Double(bitPattern: random.next() & 0x7FEF_FFFF_FFFF_FFFF))
        case 5: .blob(Data((0..<Int(random.next() % 40)).map { _ in UInt8(truncatingIfNeeded: random.next()) }))
        default: .text(text(&random))
        }
    }

    /// Up to 24 characters drawn from ASCII, JSON's escapes, control characters, and wider scalars.
    private static func text(_ random: inout SplitMix64) -> String {
        let pool: [Unicode.Scalar] = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{0}", "\u{1F}", "\u{7F}", "é", "€", "\u{FFFF}", "😀", "\u{10FFFF}"]
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int(random.next() % 25) { scalars.append(pool[Int(random.next() % UInt64(pool.count))]) }
        return String(scalars)
    }
}
