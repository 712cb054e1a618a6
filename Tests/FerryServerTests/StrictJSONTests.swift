@testable import FerryServer
import Foundation
import Testing

/// The strict JSON reader and the schema check, without a server.
@Suite struct StrictJSONTests {
    private func parse(_ text: String) throws -> JSONValue {
        try StrictJSON.parse(Array(text.utf8))
    }

    @Test func standardJSONReads() throws {
        #expect(try parse(#" {"a": [1, -0.5e+3, "x\u00e9\n", true, false, null], "b": {}} "#) == .object([
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
                case "items", "additionalProperties", "propertyNames":
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
        #expect(message(#"{"clientID":"c","mutations":[\#(mutation.replacingOccurrences(of: "\"mutationID\":1", with: "\"mutationID\":1.0"))]}"#)
            == "`mutations.0.mutationID` should be an integer, not a number")
        #expect(message(#"{"clientID":"c","mutations":[],"x":1}"#) == "the body has no property `x`")
        #expect(message(#"{"mutations":[]}"#) == "the body is missing `clientID`")
        #expect(message(#"{"clientID":"c","mutations":[\#(mutation.replacingOccurrences(of: #"{"t":"x"}"#, with: #"{"t":{"real":1.5}}"#))]}"#)?
            .hasPrefix("`mutations.0.columns.t` is not valid here: One SQLite value") == true)
        #expect(message(#"{"clientID":"c","mutations":[\#(mutation.replacingOccurrences(of: "\"hlc\":1", with: "\"hlc\":9223372036854775808"))]}"#)
            == "`mutations.0.hlc` does not fit in 64 bits")
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
}
