import Foundation

/// The request bodies' JSON Schemas, taken from the bundled OpenAPI
/// document, so what the server accepts is what the document says: every
/// object closed, every integer an integer literal that fits 64 bits,
/// every name matching its pattern.
///
/// ```swift
/// let schemas = try RequestSchemas(document: try OpenAPIDocument.bundled())
/// try schemas.validate(try StrictJSON.parse(bytes), as: "PushRequest")
/// // throws FerryServerError 400: "`mutations.0.mutationID` should be an integer, not a number"
/// ```
///
/// It reads the keywords the document uses: `$ref`, `type`, `enum`,
/// `properties`, `required`, `additionalProperties`, `propertyNames`,
/// `maxProperties`, `items`, `minItems`, `maxItems`, `minLength`,
/// `maxLength`, `pattern`, `minimum`, `maximum`, `format: int64`,
/// `contentEncoding: base64` (checked in one pass) and `oneOf`; a test
/// checks the document uses no other.
struct RequestSchemas: Sendable {
    static let keywords: Set<String> = [
        "$ref", "type", "enum", "properties", "required", "additionalProperties", "propertyNames", "maxProperties",
        "items", "minItems", "maxItems", "minLength", "maxLength", "pattern", "minimum", "maximum", "format", "oneOf",
        // Annotations, with no say in validation.
        "description", "examples", "contentEncoding", "title",
    ]

    private let schemas: [String: JSONValue]
    private let patterns: Patterns

    init(document: OpenAPIDocument) throws {
        guard case .object(let root) = try StrictJSON.parse(Array(document.data)),
              case .object(let components)? = root["components"],
              case .object(let schemas)? = components["schemas"]
        else {
            throw FerryServerError(.internalError, "openapi.json has no components.schemas")
        }
        self.schemas = schemas
        var found: [String: NSRegularExpression] = [:]
        func collect(_ value: JSONValue) throws {
            switch value {
            case .object(let members):
                if case .string(let pattern)? = members["pattern"], found[pattern] == nil {
                    found[pattern] = try NSRegularExpression(pattern: pattern)
                }
                for member in members.values { try collect(member) }
            case .array(let elements):
                for element in elements { try collect(element) }
            default:
                break
            }
        }
        try collect(.object(schemas))
        patterns = Patterns(compiled: found)
    }

    /// Checks `value` against the component schema `name`.
    func validate(_ value: JSONValue, as name: String) throws(FerryServerError) {
        try check(value, against: .object(["$ref": .string("#/components/schemas/\(name)")]), at: [])
    }

    /// Whether `value` matches the component schema `name`.
    func matches(_ value: JSONValue, _ name: String) -> Bool {
        (try? validate(value, as: name)) != nil
    }

    // MARK: - Checking

    private func check(_ value: JSONValue, against schema: JSONValue, at path: [String]) throws(FerryServerError) {
        guard case .object(let rules) = schema else { return }
        func fail(_ message: String) -> FerryServerError {
            FerryServerError(.badRequest, "\(Self.describe(path)) \(message)")
        }
        if case .string(let reference)? = rules["$ref"] {
            let name = String(reference.split(separator: "/").last ?? "")
            guard let target = schemas[name] else { throw FerryServerError(.internalError, "openapi.json has no schema \(name)") }
            try check(value, against: target, at: path)
        }
        if let allowed = rules["type"] {
            let names: [String] = switch allowed {
            case .string(let name): [name]
            case .array(let list): list.compactMap { if case .string(let name) = $0 { name } else { nil } }
            default: []
            }
            let actual = value.typeName
            guard names.contains(actual) || (actual == "integer" && names.contains("number")) else {
                throw fail("should be \(names.map(Self.article).joined(separator: " or ")), not \(Self.article(actual))")
            }
        }
        if case .array(let options)? = rules["enum"], !options.contains(value) {
            throw fail("should be one of \(options.map(Self.literal).joined(separator: ", "))")
        }
        if case .array(let options)? = rules["oneOf"] {
            let matching = options.filter { option in (try? check(value, against: option, at: path)) != nil }
            guard matching.count == 1 else {
                let what = if case .string(let text)? = rules["description"] { text } else { "one of its documented forms" }
                throw fail("is not valid here: \(what)")
            }
        }
        switch value {
        case .object(let members):
            try checkObject(members, rules, at: path, fail: fail)
        case .array(let elements):
            if case .number(let text)? = rules["minItems"], let least = Int(text), elements.count < least {
                throw fail("needs at least \(least) item\(least == 1 ? "" : "s")")
            }
            if case .number(let text)? = rules["maxItems"], let most = Int(text), elements.count > most {
                throw fail("has \(elements.count) items; at most \(most) are allowed")
            }
            if let items = rules["items"] {
                for (index, element) in elements.enumerated() { try check(element, against: items, at: path + [String(index)]) }
            }
        case .string(let text):
            let length = text.unicodeScalars.count
            if case .number(let limit)? = rules["minLength"], let least = Int(limit), length < least {
                throw fail("needs at least \(least) character\(least == 1 ? "" : "s")")
            }
            if case .number(let limit)? = rules["maxLength"], let most = Int(limit), length > most {
                throw fail("is longer than \(most) characters")
            }
            if case .string("base64")? = rules["contentEncoding"] {
                // Checked in one pass: a regular expression backtracks once per group of four and overflows on large blobs.
                guard Self.isPaddedBase64(text) else {
                    let rule = if case .string(let words)? = rules["description"] { words } else { "it must be padded base64" }
                    throw fail("is not allowed here: \(rule)")
                }
            } else if case .string(let pattern)? = rules["pattern"], !patterns.matches(text, pattern) {
                let rule = if case .string(let words)? = rules["description"] { words } else { "it must match \(pattern)" }
                throw fail("\(Self.quoted(text)) is not allowed here: \(rule)")
            }
        case .number(let text):
            try checkNumber(text, rules, fail: fail)
        case .null, .bool:
            break
        }
    }

    private func checkObject(
        _ members: [String: JSONValue], _ rules: [String: JSONValue], at path: [String],
        fail: (String) -> FerryServerError
    ) throws(FerryServerError) {
        var properties: [String: JSONValue] = [:]
        if case .object(let declared)? = rules["properties"] { properties = declared }
        if case .array(let required)? = rules["required"] {
            for case .string(let name) in required where members[name] == nil {
                throw fail("is missing `\(name)`")
            }
        }
        if case .number(let text)? = rules["maxProperties"], let most = Int(text), members.count > most {
            throw fail("has \(members.count) properties; at most \(most) are allowed")
        }
        for (name, member) in members.sorted(by: { $0.key < $1.key }) {
            if let propertyNames = rules["propertyNames"] {
                do {
                    try check(.string(name), against: propertyNames, at: path)
                } catch {
                    throw fail("has a property name \(Self.quoted(name)) that is not allowed: \(error.message)")
                }
            }
            if let property = properties[name] {
                try check(member, against: property, at: path + [name])
                continue
            }
            switch rules["additionalProperties"] {
            case .bool(false)?:
                throw fail("has no property `\(name)`")
            case let extra? where extra != .bool(true):
                try check(member, against: extra, at: path + [name])
            default:
                break
            }
        }
    }

    private func checkNumber(_ text: String, _ rules: [String: JSONValue], fail: (String) -> FerryServerError) throws(FerryServerError) {
        let integer = StrictJSON.isIntegerLiteral(text) ? Int64(text) : nil
        if case .string("int64")? = rules["format"], StrictJSON.isIntegerLiteral(text), integer == nil {
            throw fail("does not fit in 64 bits")
        }
        let value = integer.map(Double.init) ?? Double(text) ?? .nan
        if case .number(let limit)? = rules["minimum"], let least = Double(limit), value < least || value.isNaN {
            throw fail("must be at least \(limit)")
        }
        if case .number(let limit)? = rules["maximum"], let most = Double(limit), value > most || value.isNaN {
            throw fail("must be at most \(limit)")
        }
    }

    /// Standard base64 with padding: groups of four from the alphabet,
    /// `=` only to pad the last group.
    static func isPaddedBase64(_ text: String) -> Bool {
        let bytes = text.utf8
        guard bytes.count % 4 == 0 else { return false }
        var padding = 0
        for (offset, byte) in bytes.enumerated() {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "+"), UInt8(ascii: "/"):
                guard padding == 0 else { return false }
            case UInt8(ascii: "="):
                padding += 1
                guard offset >= bytes.count - 2 else { return false }
            default:
                return false
            }
        }
        return padding <= 2
    }

    // MARK: - Words

    private static func describe(_ path: [String]) -> String {
        path.isEmpty ? "the body" : "`\(path.joined(separator: "."))`"
    }

    private static func article(_ type: String) -> String {
        switch type {
        case "integer", "object", "array": "an \(type)"
        case "null": "null"
        default: "a \(type)"
        }
    }

    private static func literal(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): "`\(text)`"
        case .number(let text): text
        case .bool(let flag): String(flag)
        default: value.typeName
        }
    }

    private static func quoted(_ text: String) -> String {
        String(reflecting: text.count > 40 ? String(text.prefix(40)) + "…" : text)
    }
}

/// Compiled patterns; `NSRegularExpression` matches from any thread.
private final class Patterns: @unchecked Sendable {
    private let compiled: [String: NSRegularExpression]
    private let simple: [String: SimplePattern]

    init(compiled: [String: NSRegularExpression]) {
        self.compiled = compiled
        self.simple = compiled.keys.reduce(into: [:]) { $0[$1] = SimplePattern($1) }
    }

    /// Whether the pattern matches the whole text (ICU's `$` would also
    /// match before a final line break; the document's patterns do not).
    func matches(_ text: String, _ pattern: String) -> Bool {
        if let simple = simple[pattern] { return simple.matches(text) }
        guard let expression = compiled[pattern] else { return false }
        let whole = NSRange(text.startIndex..., in: text)
        return expression.firstMatch(in: text, range: whole)?.range == whole
    }
}

/// An anchored pattern made only of ASCII character classes (or single
/// characters) with `{m,n}` counts, such as `^[A-Za-z_][A-Za-z0-9_]{0,63}$`,
/// matched in one pass over the bytes: most names are checked this way, a
/// regular expression costing far more per call. `nil` for any other
/// pattern, and for one where a greedy pass could be wrong (a class that
/// may repeat followed by one sharing characters with it).
struct SimplePattern: Sendable {
    struct Element: Sendable {
        var allowed: [Bool]   // by ASCII byte
        var least: Int
        var most: Int
    }

    let elements: [Element]

    init?(_ pattern: String) {
        var characters = Array(pattern)
        guard characters.first == "^", characters.last == "$" else { return nil }
        characters = Array(characters.dropFirst().dropLast())
        var elements: [Element] = []
        while !characters.isEmpty {
            var allowed = [Bool](repeating: false, count: 128)
            if characters[0] == "[" {
                guard let end = characters.firstIndex(of: "]"), end > 1 else { return nil }
                let body = Array(characters[1..<end])
                characters.removeFirst(end + 1)
                var index = 0
                while index < body.count {
                    guard let low = body[index].asciiValue, body[index] != "\\", body[index] != "^" || index > 0 else { return nil }
                    if index + 2 < body.count, body[index + 1] == "-", let high = body[index + 2].asciiValue, high >= low {
                        for byte in low...high { allowed[Int(byte)] = true }
                        index += 3
                    } else {
                        allowed[Int(low)] = true
                        index += 1
                    }
                }
            } else {
                let character = characters.removeFirst()
                guard let byte = character.asciiValue, !"\\()|*+?.{}[]^$".contains(character) else { return nil }
                allowed[Int(byte)] = true
            }
            var least = 1, most = 1
            if characters.first == "{" {
                guard let end = characters.firstIndex(of: "}") else { return nil }
                let bounds = String(characters[1..<end]).split(separator: ",", omittingEmptySubsequences: false).map { Int($0) }
                characters.removeFirst(end + 1)
                guard let first = bounds.first ?? nil, bounds.count <= 2 else { return nil }
                least = first
                most = bounds.count == 2 ? (bounds[1] ?? Int.max) : first
            } else if let next = characters.first, "*+?".contains(next) {
                return nil
            }
            elements.append(Element(allowed: allowed, least: least, most: most))
        }
        for (element, next) in zip(elements, elements.dropFirst()) where element.least != element.most {
            if (0..<128).contains(where: { element.allowed[$0] && next.allowed[$0] }) { return nil }
        }
        self.elements = elements
    }

    func matches(_ text: String) -> Bool {
        let bytes = text.utf8
        var index = bytes.startIndex
        for element in elements {
            var count = 0
            while count < element.most, index != bytes.endIndex {
                let byte = bytes[index]
                guard byte < 128, element.allowed[Int(byte)] else { break }
                count += 1
                index = bytes.index(after: index)
            }
            guard count >= element.least else { return false }
        }
        return index == bytes.endIndex
    }
}
