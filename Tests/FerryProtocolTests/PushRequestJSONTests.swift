import FerryProtocol
import Foundation
import PropertyBased
import Testing

/// A push written directly (`PushRequest.jsonText()`) reads back as the
/// request it was written from, as `JSONEncoder`'s does.
@Suite struct PushRequestJSONTests {
    /// A request made from `values`: each value becomes a column of some
    /// mutation, and text values also name tables and rows (quotes,
    /// backslashes, control characters and all of Unicode).
    static func request(_ values: [ColumnValue]) -> PushRequest {
        let names = values.compactMap { value -> String? in
            if case .text(let text) = value { return text }
            return nil
        }
        let mutations = values.indices.map { index in
            let name = names.isEmpty ? "note" : names[index % names.count]
            let delete = index % 4 == 3
            var columns: [String: ColumnValue] = [:]
            if !delete {
                for (offset, value) in values[index...].prefix(5).enumerated() { columns["c\(offset)\(name)"] = value }
            }
            return Mutation(
                mutationID: Int64(index + 1), table: name, rowID: "row \"\(index)\"\\\n\(name)", scope: "user:ü/\(index % 3)",
                operation: delete ? .delete : .upsert, columns: columns,
                baseVersion: index % 2 == 0 ? nil : Int64(index) * 7 + .max / 2,
                hlc: HLCTimestamp(wallMilliseconds: 1_700_000_000_000 + Int64(index), counter: UInt16(index % 3)))
        }
        return PushRequest(
            clientID: "client/\(values.count)", mutations: mutations,
            seen: values.count % 2 == 0 ? .init(scope: "user:ü", cursor: "c\u{1}\"\(values.count)") : nil,
            settled: values.count % 3 == 0 ? names.prefix(3).map { .init(scope: "user:\($0)", id: "n\t\($0)") } : nil)
    }

    @Test func aPushWrittenDirectlyReadsBackAsTheRequest() async {
        await propertyCheck(count: 300, input: ColumnValueTests.values.array(of: 0...12)) { values in
            let request = Self.request(values)
            let direct = try? JSONDecoder().decode(PushRequest.self, from: Data(request.jsonText().utf8))
            #expect(direct == request)
        }
    }

    @Test func aRowWrittenDirectlyReadsBackAsTheRow() async {
        await propertyCheck(count: 300, input: ColumnValueTests.values.array(of: 0...12)) { values in
            let row = Dictionary(uniqueKeysWithValues: values.enumerated().map { ("c\($0.offset)\"\\", $0.element) })
            #expect((try? JSONDecoder().decode([String: ColumnValue].self, from: Data(JSONText.object(row).utf8))) == row)
        }
    }

    @Test func anAbsentBaseVersionSeenOrSettledIsLeftOutAsTheEncoderLeavesItOut() throws {
        let request = PushRequest(
            clientID: "c", mutations: [Mutation(mutationID: 1, table: "t", rowID: "r", scope: "s", operation: .delete, baseVersion: nil, hlc: HLCTimestamp(rawValue: 5))])
        let direct = try #require(try JSONSerialization.jsonObject(with: Data(request.jsonText().utf8)) as? NSDictionary)
        let encoded = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(request)) as? NSDictionary)
        #expect(direct == encoded)
    }
}
