@testable import FerryServer
import FerryProtocol
import FerryTesting
import Foundation
import Testing

/// The one-pass push reader (``PushBodyReader``) reads what Ferry clients
/// send, and never accepts a body the general path (``StrictJSON``, the
/// schema check, the strict decode) refuses, nor reads one differently.
@Suite struct PushBodyReaderTests {
    static let schemas = try! RequestSchemas(document: try! OpenAPIDocument.bundled())

    /// The general path's answer: the request, or `nil` for a refusal.
    static func general(_ bytes: [UInt8], _ schemas: RequestSchemas = schemas) -> PushRequest? {
        guard let value = try? StrictJSON.parse(bytes), (try? schemas.validate(value, as: "PushRequest")) != nil else { return nil }
        return try? PushRequest(strict: value)
    }

    static func fast(_ bytes: [UInt8], _ schemas: RequestSchemas = schemas) -> PushRequest? {
        schemas.pushReader?.read(bytes)
    }

    static let requests: [PushRequest] = {
        let stamp = HLCTimestamp(wallMilliseconds: 1_700_000_000_000, counter: 7)
        let values: [String: ColumnValue] = [
            "n": .null, "low": .integer(.min), "high": .integer(.max), "zero": .integer(0), "plain": .text("a plain note"),
            "accents": .text("héllo ✓ 😀 naïve"), "empty": .text(""), "tenth": .real(0.1), "negzero": .real(-0.0),
            "small": .real(1e-5), "big": .real(1.7976931348623157e308), "inf": .real(.infinity), "ninf": .real(-.infinity),
            "whole": .real(3), "_under": .integer(-42),
        ]
        let upsert = Mutation(
            mutationID: 1, table: "item", rowID: "row-1", scope: "user:bench", operation: .upsert, columns: values,
            baseVersion: nil, hlc: stamp)
        var based = upsert
        based.mutationID = 2
        based.baseVersion = 0
        based.rowID = "!~{}[]:,'`"
        based.columns = ["x": .integer(1)]
        var delete = upsert
        delete.mutationID = 3
        delete.operation = .delete
        delete.columns = [:]
        delete.baseVersion = 9_007_199_254_740_993
        delete.scope = "team:a.b@c+d-e_f"
        return [
            PushRequest(clientID: "c", mutations: []),
            PushRequest(clientID: "550e8400-e29b-41d4-a716-446655440000", mutations: [upsert, based, delete]),
            PushRequest(
                clientID: "c_1", mutations: [upsert],
                seen: PushRequest.Seen(scope: "user:bench", cursor: "YzJ8ZXBvY2h8dXNlcjpiZW5jaHwxfDB8Zw.mac")),
            PushRequest(
                clientID: "c",
                mutations: (1...1000).map { id in
                    var mutation = upsert
                    mutation.mutationID = Int64(id)
                    mutation.rowID = "row-\(id)"
                    return mutation
                }),
        ]
    }()

    @Test func whatAFerryClientSendsIsReadInOnePass() throws {
        #expect(Self.schemas.pushReader?.maxMutations == 1000)
        #expect(Self.schemas.pushReader?.maxColumns == 256)
        for request in Self.requests {
            let bytes = Array(request.jsonText().utf8)
            #expect(Self.fast(bytes) == request)
            #expect(Self.general(bytes) == request)
            // With spaces and line breaks between every token, too.
            let spaced = Array(request.jsonText().replacingOccurrences(of: ",\"", with: " ,\n\t\"").utf8)
            #expect(Self.fast(Array(" \n".utf8) + spaced + Array("\r\n".utf8)) == request)
        }
    }

    /// Each of these the reader leaves to the general path, which accepts
    /// the first group and refuses the second, as before.
    @Test func itLeavesTheRestToTheGeneralPath() {
        let mutation = #"{"mutationID":1,"table":"note","rowID":"r","scope":"user:a","operation":"upsert","columns":{"t":"x"},"hlc":1}"#
        func body(_ mutation: String) -> String { #"{"clientID":"c","mutations":[\#(mutation)]}"# }
        let accepted = [
            body(mutation.replacingOccurrences(of: #""x""#, with: #""line\nbreak""#)),
            body(mutation.replacingOccurrences(of: #""x""#, with: #""a\/b""#)),
            body(mutation.replacingOccurrences(of: #""r""#, with: #""r\u0041""#)),
            body(mutation.replacingOccurrences(of: #""x""#, with: #"{"blob":"AAE="}"#)),
            #"{"clientID":"c","mutations":[],"settled":[{"scope":"user:a","id":"n1"}]}"#,
            body(mutation.replacingOccurrences(of: #""t""#, with: #""\u0074""#)),
        ]
        let refused = [
            #"{"clientID":"c","mutations":[],"x":1}"#,
            #"{"clientID":"c","clientID":"d","mutations":[]}"#,
            #"{"mutations":[]}"#,
            body(mutation.replacingOccurrences(of: #""mutationID":1"#, with: #""mutationID":1.0"#)),
            body(mutation.replacingOccurrences(of: #""mutationID":1"#, with: #""mutationID":-0"#)),
            body(mutation.replacingOccurrences(of: #""mutationID":1"#, with: #""mutationID":01"#)),
            body(mutation.replacingOccurrences(of: #""hlc":1"#, with: #""hlc":9223372036854775808"#)),
            body(mutation.replacingOccurrences(of: #""hlc":1"#, with: #""hlc":1e3"#)),
            body(mutation.replacingOccurrences(of: #""hlc":1"#, with: #""hlc":-1"#)),
            body(mutation.replacingOccurrences(of: #""upsert""#, with: #""delete""#)),
            body(mutation.replacingOccurrences(of: #""upsert""#, with: #""merge""#)),
            body(mutation.replacingOccurrences(of: #""t":"x""#, with: #""t":"x","t":"y""#)),
            body(mutation.replacingOccurrences(of: #""t":"x""#, with: #""1t":"x""#)),
            body(mutation.replacingOccurrences(of: #""x""#, with: #"{"real":"1.50"}"#.replacingOccurrences(of: "1.50", with: "01.5"))),
            body(mutation.replacingOccurrences(of: #""x""#, with: #"{"real":"nan"}"#)),
            body(mutation.replacingOccurrences(of: #""x""#, with: #"true"#)),
            body(mutation.replacingOccurrences(of: #""r""#, with: #""a b""#)),
            body(mutation.replacingOccurrences(of: #""r""#, with: "\"\(String(repeating: "r", count: 129))\"")),
            body(mutation.replacingOccurrences(of: #""note""#, with: "\"\(String(repeating: "t", count: 65))\"")),
            body(mutation.replacingOccurrences(of: #""user:a""#, with: "\"\(String(repeating: "s", count: 201))\"")),
            #"{"clientID":"\#(String(repeating: "c", count: 129))","mutations":[]}"#,
            body(mutation.replacingOccurrences(of: #","hlc":1"#, with: #","baseVersion":-1,"hlc":1"#)),
            body(mutation.replacingOccurrences(of: #","hlc":1"#, with: #","baseVersion":null,"baseVersion":null,"hlc":1"#)),
            body(mutation.replacingOccurrences(of: #""x""#, with: #"{"real":"1","x":1}"#)),
            body(mutation.replacingOccurrences(of: #""hlc":1"#, with: #""hlc":1E3"#)),
            #"{"clientID":"c","mutations":[],"seen":{"scope":"user:a","cursor":"x","x":1}}"#,
            body(mutation.replacingOccurrences(of: #""note""#, with: #""9note""#)),
            body(mutation.replacingOccurrences(of: #""user:a""#, with: #""user/a""#)),
            body(mutation.replacingOccurrences(of: #","hlc":1"#, with: "")),
            body(mutation) + " x",
            #"{"clientID":"c","mutations":[],"seen":{"scope":"user:a"}}"#,
            #"{"clientID":"c","mutations":[],"seen":null}"#,
            "{\"clientID\":\"c\",\"mutations\":[],\"seen\":{\"scope\":\"user:a\",\"cursor\":\"\u{1}\"}}",
            "[]", "", "{",
        ]
        for text in accepted + refused {
            #expect(Self.fast(Array(text.utf8)) == nil, "\(text)")
        }
        for text in accepted { #expect(Self.general(Array(text.utf8)) != nil, "\(text)") }
        for text in refused { #expect(Self.general(Array(text.utf8)) == nil, "\(text)") }
        // Bytes that are not UTF-8 in a value.
        var invalid = Array(body(mutation).utf8)
        invalid[invalid.firstIndex(of: UInt8(ascii: "x"))!] = 0xC3
        #expect(Self.fast(invalid) == nil)
        #expect(Self.general(invalid) == nil)
    }

    /// The rules the reader checks by hand, as the document states them: a
    /// change to any of these schemas fails here until the reader is changed
    /// to match (annotations aside; the limits come from the document).
    @Test func theDocumentStatesTheRulesTheReaderChecks() throws {
        guard case .object(let root) = try StrictJSON.parse(Array(try OpenAPIDocument.bundled().data)),
            case .object(let components)? = root["components"], case .object(let schemas)? = components["schemas"]
        else {
            Issue.record("openapi.json has no components.schemas")
            return
        }
        func rules(_ value: JSONValue) -> JSONValue {
            switch value {
            case .object(let members):
                var kept = JSONObject()
                for (key, member) in members where !["description", "examples", "title"].contains(key) {
                    _ = kept.updateValue(rules(member), forKey: key)
                }
                return .object(kept)
            case .array(let items): return .array(items.map(rules))
            default: return value
            }
        }
        let expected = [
            "PushRequest":
                ##"{"additionalProperties":false,"properties":{"clientID":{"pattern":"^[A-Za-z0-9_-]{1,128}$","type":"string"},"mutations":{"items":{"$ref":"#/components/schemas/Mutation"},"maxItems":1000,"type":"array"},"seen":{"$ref":"#/components/schemas/SeenCursor"},"settled":{"items":{"$ref":"#/components/schemas/SettledNotice"},"maxItems":1000,"type":"array"}},"required":["clientID","mutations"],"type":"object"}"##,
            "Mutation":
                ##"{"additionalProperties":false,"if":{"properties":{"operation":{"enum":["delete"]}}},"properties":{"baseVersion":{"format":"int64","minimum":0,"type":["integer","null"]},"columns":{"$ref":"#/components/schemas/Columns"},"hlc":{"format":"int64","minimum":0,"type":"integer"},"mutationID":{"format":"int64","minimum":1,"type":"integer"},"operation":{"enum":["upsert","delete"],"type":"string"},"rowID":{"pattern":"^[!-~]{1,128}$","type":"string"},"scope":{"pattern":"^[A-Za-z0-9_.:@+-]{1,200}$","type":"string"},"table":{"pattern":"^[A-Za-z_][A-Za-z0-9_]{0,63}$","type":"string"}},"required":["mutationID","table","rowID","scope","operation","columns","hlc"],"then":{"properties":{"columns":{"maxProperties":0}}},"type":"object"}"##,
            "Columns":
                ##"{"additionalProperties":{"$ref":"#/components/schemas/ColumnValue"},"maxProperties":256,"propertyNames":{"pattern":"^[A-Za-z_][A-Za-z0-9_]{0,63}$"},"type":"object"}"##,
            "ColumnValue":
                ##"{"oneOf":[{"type":"null"},{"format":"int64","type":"integer"},{"type":"string"},{"additionalProperties":false,"properties":{"real":{"pattern":"^-?(inf|(0|[1-9][0-9]*)(\\.[0-9]+)?(e[+-]?[0-9]+)?)$","type":"string"}},"required":["real"],"type":"object"},{"additionalProperties":false,"properties":{"blob":{"contentEncoding":"base64","pattern":"^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$","type":"string"}},"required":["blob"],"type":"object"}]}"##,
            "SeenCursor":
                ##"{"additionalProperties":false,"properties":{"cursor":{"type":"string"},"scope":{"pattern":"^[A-Za-z0-9_.:@+-]{1,200}$","type":"string"}},"required":["scope","cursor"],"type":"object"}"##,
        ]
        for (name, text) in expected {
            let stated = try #require(schemas[name]).json(indent: nil)
            #expect(rules(try StrictJSON.parse(Array(stated.utf8))) == (try StrictJSON.parse(Array(text.utf8))), "\(name)")
        }
    }

    /// Each id and name at its longest, the most columns and mutations: read
    /// alike; one more, refused by both.
    @Test func theEdgesOfEachRuleAreReadAsTheGeneralPathReadsThem() {
        func mutation(_ id: Int, columns: Int = 1, table: Int = 64, rowID: Int = 128, scope: Int = 200) -> String {
            let cells = (0..<columns).map { #""c\#($0)":\#($0)"# }.joined(separator: ",")
            return
                #"{"mutationID":\#(id),"table":"\#(String(repeating: "t", count: table))","rowID":"\#(String(repeating: "~", count: rowID - 1))\#(id % 10)","scope":"\#(String(repeating: "@", count: scope))","operation":"upsert","columns":{\#(cells)},"hlc":0}"#
        }
        func body(_ mutations: [String], clientID: Int = 128) -> [UInt8] {
            Array(#"{"clientID":"\#(String(repeating: "-", count: clientID))","mutations":[\#(mutations.joined(separator: ","))]}"#.utf8)
        }
        let longest = body([mutation(1, columns: 256)])
        #expect(Self.fast(longest) != nil)
        #expect(Self.fast(longest) == Self.general(longest))
        let most = body((1...1000).map { mutation($0) })
        #expect(Self.fast(most)?.mutations.count == 1000)
        #expect(Self.fast(most) == Self.general(most))
        for over in [
            body([mutation(1, columns: 257)]), body((1...1001).map { mutation($0) }), body([mutation(1)], clientID: 129),
            body([mutation(1, table: 65)]), body([mutation(1, rowID: 129)]), body([mutation(1, scope: 201)]),
        ] {
            #expect(Self.fast(over) == nil)
            #expect(Self.general(over) == nil)
        }
    }

    /// The limits the configuration writes into the document hold here too.
    @Test func theConfiguredLimitsHold() throws {
        var limits = ServerLimits()
        limits.maxMutationsPerPush = 2
        limits.maxColumnsPerMutation = 1
        let schemas = try RequestSchemas(document: try OpenAPIDocument.bundled(limits: limits))
        func mutation(_ id: Int, _ columns: String) -> String {
            #"{"mutationID":\#(id),"table":"note","rowID":"r\#(id)","scope":"user:a","operation":"upsert","columns":\#(columns),"hlc":1}"#
        }
        let two = Array(#"{"clientID":"c","mutations":[\#(mutation(1, #"{"a":1}"#)),\#(mutation(2, #"{"a":2}"#))]}"#.utf8)
        let three = Array(#"{"clientID":"c","mutations":[\#(mutation(1, "{}")),\#(mutation(2, "{}")),\#(mutation(3, "{}"))]}"#.utf8)
        let wide = Array(#"{"clientID":"c","mutations":[\#(mutation(1, #"{"a":1,"b":2}"#))]}"#.utf8)
        #expect(Self.fast(two, schemas)?.mutations.count == 2)
        #expect(Self.fast(two, schemas) == Self.general(two, schemas))
        for bytes in [three, wide] {
            #expect(Self.fast(bytes, schemas) == nil)
            #expect(Self.general(bytes, schemas) == nil)
        }
    }

    /// Damaged bodies, from one to three random edits of real ones: the
    /// reader gives a request only where the general path gives the same.
    @Test func itNeverAcceptsWhatTheGeneralPathRefuses() {
        var random = SplitMix64(seed: 0x5EED_F00D)
        let seeds =
            Self.requests.prefix(3).map { Array($0.jsonText().utf8) } + [
                Array(
                    #" { "clientID" : "c" , "mutations" : [ { "hlc" : 0 , "columns" : { "a" : { "real" : "-1.5e+10" } , "b" : null } , "operation" : "upsert" , "scope" : "s" , "rowID" : "r" , "table" : "t" , "mutationID" : 1 , "baseVersion" : null } ] } "#
                        .utf8)
            ]
        let alphabet = Array(#"{}[],:"\ -.eE+0123456789nulltruefalsexyzabc_"#.utf8) + [0x00, 0x1F, 0x7F, 0x80, 0xC3, 0xA9, 0xFF, 0x0A]
        let numbers = ["0", "-0", "-1", "01", "1.0", "1e2", "9223372036854775807", "9223372036854775808", "-9223372036854775808"]
        var readFast = 0, agreed = 0
        for _ in 0..<20_000 {
            var bytes = seeds[Int(random.next() % UInt64(seeds.count))]
            for _ in 0...(random.next() % 3) where !bytes.isEmpty {
                let at = Int(random.next() % UInt64(bytes.count))
                let byte = alphabet[Int(random.next() % UInt64(alphabet.count))]
                switch random.next() % 5 {
                case 0: bytes[at] = byte
                case 1 where UInt8(ascii: "0")...UInt8(ascii: "9") ~= bytes[at]:
                    // A number for a digit: the edges of what each field allows.
                    bytes.replaceSubrange(at...at, with: numbers[Int(random.next() % UInt64(numbers.count))].utf8)
                case 2: bytes.remove(at: at)
                case 3: bytes.insert(byte, at: at)
                default:
                    let end = min(bytes.count, at + 1 + Int(random.next() % 12))
                    bytes.insert(contentsOf: bytes[at..<end], at: at)
                }
            }
            guard let fast = Self.fast(bytes) else { continue }
            readFast += 1
            let general = Self.general(bytes)
            #expect(general == fast, "\(String(decoding: bytes, as: UTF8.self))")
            if general == fast { agreed += 1 }
        }
        // Enough damaged bodies stay valid (a digit for a digit, a letter in a name) to test the agreement.
        #expect(readFast > 500)
        #expect(agreed == readFast)
    }
}
