@testable import FerryServer
import FerryProtocol
import Foundation
import Testing

/// The strict JSON reader and the schema check, without a server.
@Suite struct StrictJSONTests {
    private func parse(_ text: String) throws -> JSONValue {
        try StrictJSON.parse(Array(text.utf8))
    }

    @Test func standardJSONReads() throws {
        #expect(
            try parse(#" {"a": [1, -0.5e+3, "x\u00e9\n", true, false, null], "b": {}} "#)
                == .object([
                    "a": .array([.number("1"), .number("-0.5e+3"), .string("xé\n"), .bool(true), .bool(false), .null]),
                    "b": .object([:]),
                ]))
        #expect(try parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try parse("[]") == .array([]))
        #expect(try parse("1").typeName == "integer")
        #expect(try parse("1.0").typeName == "number")
        #expect(try parse("1e3").typeName == "number")
    }

    @Test(arguments: [
        "[1,]", #"{"a":1,}"#, "[1 2]", "{'a':1}", "/* c */ 1", "// c\n1", "NaN", "Infinity", "01", "-", "1.", ".5", "1e",
        "+1", "tru", #"{"a" 1}"#, #"{"a":1,"a":2}"#, #""\ud800""#, #""\x41""#, "\"a\u{01}\"", "\"open", "[", "1 2", "",
        String(repeating: "[", count: 40) + String(repeating: "]", count: 40),
    ])
    func nonStandardJSONIsRefused(text: String) {
        #expect(throws: StrictJSON.SyntaxError.self) { try parse(text) }
    }

    /// An object's members keep the text's order, each key once, below and
    /// past the size from which keys are hashed; a repeated key is refused
    /// wherever it comes, with the place of its second spelling.
    @Test func objectsKeepTheirMembersInOrderAndRefuseARepeatedKey() throws {
        for size in [1, JSONObject.indexedFrom - 1, JSONObject.indexedFrom, 300] {
            let keys = (0..<size).map { "k\($0)" }.shuffled()
            let text = "{" + keys.enumerated().map { #""\#($1)":\#($0)"# }.joined(separator: ",") + "}"
            guard case .object(let object) = try parse(text) else { Issue.record("not an object"); return }
            #expect(object.keys == keys)
            #expect(object.count == size)
            for (offset, key) in keys.enumerated() { #expect(object[key] == .number(String(offset))) }
            #expect(object["absent"] == nil)
            let repeated = String(text.dropLast()) + #","\#(keys[size / 2])":true}"#
            #expect(throws: StrictJSON.SyntaxError(message: "property \(String(reflecting: keys[size / 2])) appears twice", offset: text.utf8.count)) {
                try parse(repeated)
            }
        }
        var object: JSONObject = ["a": .null, "b": .bool(true)]
        #expect(object == ["b": .bool(true), "a": .null], "equal whatever the order")
        #expect(object != ["a": .null, "b": .bool(false)])
        #expect(object.updateValue(.number("2"), forKey: "a") == .null)
        #expect(object.keys == ["a", "b"], "a replaced member keeps its place")
        object["a"] = nil
        #expect(object.keys == ["b"] && object["a"] == nil)
        for index in 0..<40 { object["x\(index)"] = .number(String(index)) }
        object["x3"] = nil
        #expect(object.count == 40 && object["x3"] == nil && object["x39"] == .number("39") && object["b"] == .bool(true))
    }

    @Test func invalidUTF8IsRefused() {
        #expect(throws: StrictJSON.SyntaxError.self) { try StrictJSON.parse([0x22, 0xC3, 0x28, 0x22]) }
    }

    @Test func theDocumentUsesOnlyKeywordsTheCheckReads() throws {
        let document = try OpenAPIDocument.bundled()
        guard case .object(let root) = try StrictJSON.parse(Array(document.data)),
            case .object(let components)? = root["components"], case .object(let schemas)? = components["schemas"]
        else { Issue.record("no components.schemas"); return }
        var unknown: Set<String> = []
        func visit(_ schema: JSONValue) {
            guard case .object(let members) = schema else { return }
            for (key, value) in members {
                if !RequestSchemas.keywords.contains(key) { unknown.insert(key) }
                switch key {
                case "properties":
                    if case .object(let properties) = value { properties.values.forEach(visit) }
                case "oneOf":
                    if case .array(let options) = value { options.forEach(visit) }
                case "items", "additionalProperties", "propertyNames", "if", "then":
                    visit(value)
                default:
                    break
                }
            }
        }
        schemas.values.forEach(visit)
        #expect(unknown.isEmpty, "keywords the server would ignore: \(unknown)")
    }

    @Test func schemaErrorsSayWhere() throws {
        let schemas = try RequestSchemas(document: try OpenAPIDocument.bundled())
        func message(_ json: String) -> String? {
            do {
                try schemas.validate(try parse(json), as: "PushRequest")
                return nil
            } catch let error as FerryServerError {
                return error.message
            } catch {
                return "\(error)"
            }
        }
        let mutation = #"{"mutationID":1,"table":"note","rowID":"r","scope":"user:a","operation":"upsert","columns":{"t":"x"},"hlc":1}"#
        #expect(message(#"{"clientID":"c","mutations":[\#(mutation)]}"#) == nil)
        #expect(
            message(#"{"clientID":"c","mutations":[\#(mutation.replacingOccurrences(of: "\"mutationID\":1", with: "\"mutationID\":1.0"))]}"#)
                == "`mutations.0.mutationID` should be an integer, not a number")
        #expect(message(#"{"clientID":"c","mutations":[],"x":1}"#) == "the body has no property `x`")
        #expect(message(#"{"mutations":[]}"#) == "the body is missing `clientID`")
        #expect(
            message(#"{"clientID":"c","mutations":[\#(mutation.replacingOccurrences(of: #"{"t":"x"}"#, with: #"{"t":{"real":1.5}}"#))]}"#)?
                .hasPrefix("`mutations.0.columns.t` is not valid here: One SQLite value") == true)
        #expect(
            message(#"{"clientID":"c","mutations":[\#(mutation.replacingOccurrences(of: "\"hlc\":1", with: "\"hlc\":9223372036854775808"))]}"#)
                == "`mutations.0.hlc` does not fit in 64 bits")
        // What the document states beside the properties: a delete's shape, each pulled scope once.
        let delete = mutation.replacingOccurrences(of: "\"upsert\"", with: "\"delete\"")
        #expect(message(#"{"clientID":"c","mutations":[\#(delete)]}"#) == "`mutations.0` is not valid here: a delete carries no columns")
        #expect(message(#"{"clientID":"c","mutations":[\#(delete.replacingOccurrences(of: #"{"t":"x"}"#, with: "{}"))]}"#) == nil)
        let scope = #"{"scope":"user:a"}"#
        #expect(throws: FerryServerError.self) {
            try schemas.validate(try parse(#"{"clientID":"c","scopes":[\#(scope),{"scope":"b"},\#(scope)]}"#), as: "PullRequest")
        }
        #expect((try? schemas.validate(try parse(#"{"clientID":"c","scopes":[\#(scope),{"scope":"b"}]}"#), as: "PullRequest")) != nil)
    }
    /// Patterns match whole strings (no line break sneaks past `$`), and a
    /// large blob is checked in one pass, not by a backtracking expression.
    @Test func patternsMatchWholeStringsAndLargeBlobsPass() throws {
        let schemas = try RequestSchemas(document: try OpenAPIDocument.bundled())
        func push(_ columns: String, scope: String = "user:a") -> JSONValue {
            try! StrictJSON.parse(Array(#"{"clientID":"c","mutations":[{"mutationID":1,"table":"note","rowID":"r","scope":"\#(scope)","operation":"upsert","columns":\#(columns),"hlc":1}]}"#.utf8))
        }
        let blob = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0) }).base64EncodedString()
        #expect(schemas.matches(push(#"{"b":{"blob":"\#(blob)"}}"#), "PushRequest"))
        #expect(!schemas.matches(push(#"{"b":{"blob":"AAA"}}"#), "PushRequest"))
        #expect(!schemas.matches(push(#"{"b":{"blob":"A=AA"}}"#), "PushRequest"))
        #expect(schemas.matches(push(#"{"b":{"blob":"AA=="}}"#), "PushRequest"))
        #expect(!schemas.matches(push(#"{"r":{"real":"1.5\n"}}"#), "PushRequest"))
        #expect(!schemas.matches(push("{}", scope: "user:a\\n"), "PushRequest"))
        #expect(RequestSchemas.isPaddedBase64("") && RequestSchemas.isPaddedBase64("aGVsbG8=") && !RequestSchemas.isPaddedBase64("aGVsbG8"))
    }
    /// The one-pass matcher says what the regular expression says, for
    /// every pattern of the document it takes.
    @Test func simplePatternsAgreeWithRegularExpressions() throws {
        let patterns = [
            "^[A-Za-z0-9_-]{1,128}$", "^[A-Za-z_][A-Za-z0-9_]{0,63}$", "^[!-~]{1,128}$", "^[A-Za-z0-9_.:@+-]{1,200}$",
            "^[A-Za-z0-9_.:+-]{1,199}@[A-Za-z0-9_.@+-]{1,128}$", "^[A-Za-z0-9_.@+-]{1,128}$",
        ]
        let samples = [
            "", "a", "A_b-9", "9abc", "_x", "has space", "tab\t", "a@b", "@b", "a@", "a@b@c", "user:alice", "é", "a\n",
            "x/y", "~!", String(repeating: "a", count: 64), String(repeating: "a", count: 65), String(repeating: "b", count: 129),
            "label.x@owner.y", "team:x@al+ice", ":@:",
        ]
        for pattern in patterns {
            let simple = try #require(SimplePattern(pattern), "\(pattern) is not taken")
            let expression = try NSRegularExpression(pattern: pattern)
            for sample in samples {
                let whole = NSRange(sample.startIndex..., in: sample)
                let expected = expression.firstMatch(in: sample, range: whole)?.range == whole
                #expect(simple.matches(sample) == expected, "\(pattern) on \(String(reflecting: sample))")
            }
        }
        #expect(SimplePattern("^-?(inf|[0-9]+)$") == nil)
        #expect(SimplePattern("^[a-z]{0,5}[a-c]$") == nil, "a greedy pass could be wrong here")
    }

    /// The `real` value's pattern, matched by hand, says what the regular
    /// expression says: for its documented examples, edge cases, and
    /// thousands of random strings over the characters that matter. The
    /// document's pattern is the one it takes, so a push's reals never go
    /// through the regular expression.
    @Test func theDecimalPatternAgreesWithTheRegularExpression() throws {
        let document = try StrictJSON.parse(Array(try OpenAPIDocument.bundled().data))
        guard case .object(let root) = document, case .object(let components)? = root["components"],
            case .object(let schemas)? = components["schemas"], case .object(let columnValue)? = schemas["ColumnValue"],
            case .array(let forms)? = columnValue["oneOf"]
        else { Issue.record("openapi.json has no ColumnValue"); return }
        let patterns = forms.compactMap { form -> String? in
            guard case .object(let rules) = form, case .object(let properties)? = rules["properties"],
                case .object(let real)? = properties["real"], case .string(let pattern)? = real["pattern"]
            else { return nil }
            return pattern
        }
        #expect(patterns == [DecimalPattern.source], "the document's real pattern is the one matched by hand")
        let decimal = try #require(DecimalPattern(DecimalPattern.source))
        #expect(DecimalPattern("^-?(inf|[0-9]+)$") == nil)
        #expect(SimplePattern(DecimalPattern.source) == nil, "the compiled pattern reaches the decimal matcher")
        let expression = try NSRegularExpression(pattern: DecimalPattern.source)
        func expected(_ sample: String) -> Bool {
            let whole = NSRange(sample.startIndex..., in: sample)
            return expression.firstMatch(in: sample, range: whole)?.range == whole
        }
        var samples = [
            "", "-", "0", "-0", "00", "01", "10", "0.1", "-0.0", "1e-05", "1.7976931348623157e+308", "inf", "-inf", "infinity",
            "Inf", "nan", "1.", ".5", "1e", "1e+", "1E5", "1.5\n", " 1", "1 ", "--1", "1.2.3", "5e3.1", "12e+34", "é",
        ]
        var random = SystemRandomNumberGenerator()
        let alphabet = Array("-+0123456789.einfE x")
        for _ in 0..<20_000 {
            samples.append(String((0..<Int.random(in: 0...9, using: &random)).map { _ in alphabet.randomElement(using: &random)! }))
        }
        for sample in samples {
            #expect(decimal.matches(sample) == expected(sample), "\(String(reflecting: sample))")
        }
        let pattern = try CompiledPattern(DecimalPattern.source)
        #expect(pattern.matches("-1.5e+3") && !pattern.matches("1.5\n"))
    }

    @Test func aPushAnswerIsWrittenAsJSONEncoderWritesIt() throws {
        let response = PushResponse(
            lastAppliedMutationID: 9,
            results: [
                MutationResult(mutationID: 8, status: .applied, version: 3),
                MutationResult(mutationID: 9, status: .rejected, reason: "no"),
            ])
        let read = try JSONDecoder().decode(PushResponse.self, from: Data(try StoreCoding.pushResponseJSON(response).utf8))
        #expect(read == response)
        var covering = response
        covering.covered = [
            PushResponse.CoveredScope(scope: "user:a", after: "x.y", cursor: "x.z", emptyBefore: true),
            PushResponse.CoveredScope(scope: "team:b", after: "p.q", cursor: "p.r"),
        ]
        let json = Data(try StoreCoding.pushResponseJSON(covering).utf8)
        #expect(try JSONDecoder().decode(PushResponse.self, from: json) == covering)
        #expect(try PullResponseReader.pushResponse(json) == covering)
    }
    /// A push read from the checked value equals the push `JSONDecoder` reads.
    @Test func aPushIsReadFromTheCheckedValueAsJSONDecoderReadsIt() throws {
        let push = PushRequest(
            clientID: "c-1",
            mutations: [
                Mutation(
                    mutationID: 1, table: "note", rowID: "r\"1", scope: "user:alice", operation: .upsert,
                    columns: [
                        "n": .null, "i": .integer(.min), "t": .text("é\n\u{1}"), "r": .real(-0.0), "inf": .real(.infinity),
                        "b": .blob(Data([0, 255, 7])), "e": .blob(Data()),
                    ],
                    baseVersion: 7, hlc: HLCTimestamp(rawValue: 123)),
                Mutation(
                    mutationID: 2, table: "note", rowID: "r2", scope: "team:x", operation: .delete, columns: [:], baseVersion: nil,
                    hlc: HLCTimestamp(rawValue: 0)),
            ])
        let bytes = try JSONEncoder().encode(push)
        let read = try PushRequest(strict: try StrictJSON.parse(Array(bytes)))
        #expect(read == (try JSONDecoder().decode(PushRequest.self, from: bytes)))
        #expect(read == push)
    }

    /// A pull read from the checked value equals the pull `JSONDecoder` reads, nulls and absent fields alike.
    @Test func aPullIsReadFromTheCheckedValueAsJSONDecoderReadsIt() throws {
        for text in [
            #"{"clientID":"c","scopes":[{"scope":"user:alice","cursor":"x.y","notices":"e/0.3"},{"scope":"team:x","previous":"p.q"}],"limit":7}"#,
            #"{"clientID":"c","scopes":[{"scope":"team:x","cursor":null,"notices":null,"previous":null}],"limit":null}"#,
            #"{"clientID":"c","scopes":[]}"#,
        ] {
            let bytes = Array(text.utf8)
            #expect(try PullRequest(strict: StrictJSON.parse(bytes)) == JSONDecoder().decode(PullRequest.self, from: Data(bytes)))
        }
    }
}
