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
/// `contentEncoding: base64` (checked in one pass), `oneOf`, `uniqueItems`
/// and `if`/`then`; a test checks the document uses no other.
struct RequestSchemas: Sendable {
    static let keywords: Set<String> = [
        "$ref", "type", "enum", "properties", "required", "additionalProperties", "propertyNames", "maxProperties",
        "items", "minItems", "maxItems", "minLength", "maxLength", "pattern", "minimum", "maximum", "format", "oneOf",
        "uniqueItems", "if", "then",
        // Annotations, with no say in validation.
        "description", "examples", "contentEncoding", "title",
    ]

    private let nodes: [String: SchemaNode]

    /// The one-pass reader for push bodies, with the limits this document
    /// states (``PushBodyReader``); `nil` if it states none, or a negative
    /// one (then every body goes the general way, which refuses it).
    let pushReader: PushBodyReader?

    init(document: OpenAPIDocument) throws {
        guard case .object(let root) = try StrictJSON.parse(Array(document.data)),
            case .object(let components)? = root["components"],
            case .object(let schemas)? = components["schemas"]
        else {
            throw FerryServerError(.internalError, "openapi.json has no components.schemas")
        }
        var compiler = SchemaCompiler(schemas: schemas)
        nodes = try schemas.keys.reduce(into: [:]) { $0[$1] = try compiler.component($1) }
        if let mutations = nodes["PushRequest"]?.properties["mutations"]?.maxItems, let columns = nodes["Columns"]?.maxProperties,
            mutations >= 0, columns >= 0
        {
            pushReader = PushBodyReader(maxMutations: mutations, maxColumns: columns)
        } else {
            pushReader = nil
        }
    }

    /// Checks `value` against the component schema `name`.
    func validate(_ value: JSONValue, as name: String) throws(FerryServerError) {
        guard let node = nodes[name] else { throw FerryServerError(.internalError, "openapi.json has no schema \(name)") }
        var path: [String] = []
        path.reserveCapacity(8)
        try check(value, against: node, at: &path)
    }

    /// Whether `value` matches the component schema `name`.
    func matches(_ value: JSONValue, _ name: String) -> Bool {
        (try? validate(value, as: name)) != nil
    }

    // MARK: - Checking

    private func check(_ value: JSONValue, against node: SchemaNode, at path: inout [String], quiet: Bool = false) throws(FerryServerError) {
        if let types = node.types {
            guard types.admits(value) else {
                throw Self.fail(quiet, path, "should be \(types.names.map(Self.article).joined(separator: " or ")), not \(Self.article(value.typeName))")
            }
        }
        if let options = node.enumValues, !options.contains(value) {
            throw Self.fail(quiet, path, "should be one of \(options.map(Self.literal).joined(separator: ", "))")
        }
        if let options = node.oneOf {
            var matching = 0
            let depth = path.count
            for option in options {
                // An option of another type fails at once: not tried (a pushed value is one of five forms).
                if let types = option.types, !types.admits(value) { continue }
                if (try? check(value, against: option, at: &path, quiet: true)) != nil { matching += 1 }
                path.removeLast(path.count - depth)  // a failed option leaves its place behind
            }
            guard matching == 1 else {
                throw Self.fail(quiet, path, "is not valid here: \(node.description ?? "one of its documented forms")")
            }
        }
        if let condition = node.condition, let consequence = node.consequence {
            var scratch = path  // a failed quiet check leaves its place behind
            if (try? check(value, against: condition, at: &scratch, quiet: true)) != nil,
                (try? check(value, against: consequence, at: &scratch, quiet: true)) == nil
            {
                throw Self.fail(quiet, path, "is not valid here: \(consequence.description ?? "it breaks a rule its form states")")
            }
        }
        switch value {
        case .object(let members):
            try checkObject(members, node, at: &path, quiet: quiet)
        case .array(let elements):
            if let least = node.minItems, elements.count < least {
                throw Self.fail(quiet, path, "needs at least \(least) item\(least == 1 ? "" : "s")")
            }
            if let most = node.maxItems, elements.count > most {
                throw Self.fail(quiet, path, "has \(elements.count) items; at most \(most) are allowed")
            }
            if node.uniqueItems, let index = elements.indices.dropFirst().first(where: { elements[..<$0].contains(elements[$0]) }) {
                throw Self.fail(quiet, path, "has item \(index) twice; each item may appear once")
            }
            if let items = node.items {
                for (index, element) in elements.enumerated() {
                    path.append(String(index))
                    try check(element, against: items, at: &path, quiet: quiet)
                    path.removeLast()
                }
            }
        case .string(let text):
            if node.minLength != nil || node.maxLength != nil {
                let length = text.unicodeScalars.count
                if let least = node.minLength, length < least {
                    throw Self.fail(quiet, path, "needs at least \(least) character\(least == 1 ? "" : "s")")
                }
                if let most = node.maxLength, length > most {
                    throw Self.fail(quiet, path, "is longer than \(most) characters")
                }
            }
            if node.base64 {
                // Checked in one pass: a regular expression backtracks once per group of four and overflows on large blobs.
                guard Self.isPaddedBase64(text) else {
                    throw Self.fail(quiet, path, "is not allowed here: \(node.description ?? "it must be padded base64")")
                }
            } else if let pattern = node.pattern, !pattern.matches(text) {
                throw Self.fail(quiet, path, "\(Self.quoted(text)) is not allowed here: \(node.description ?? "it must match \(pattern.source)")")
            }
        case .number(let text):
            try checkNumber(text, node, at: path, quiet: quiet)
        case .null, .bool:
            break
        }
    }

    private func checkObject(_ members: JSONObject, _ node: SchemaNode, at path: inout [String], quiet: Bool) throws(FerryServerError) {
        for name in node.required where members[name] == nil {
            throw Self.fail(quiet, path, "is missing `\(name)`")
        }
        if let most = node.maxProperties, members.count > most {
            throw Self.fail(quiet, path, "has \(members.count) properties; at most \(most) are allowed")
        }
        if case .allowed = node.additional, node.propertyNames == nil {
            // Only the named properties have rules (an `if` that looks at one property of a mutation): each is
            // looked up, instead of every member looked up among them.
            for (name, schema) in node.properties {
                guard let member = members[name] else { continue }
                path.append(name)
                try check(member, against: schema, at: &path, quiet: quiet)
                path.removeLast()
            }
            return
        }
        for (name, member) in members {
            if let propertyNames = node.propertyNames {
                var here = path
                do {
                    try check(.string(name), against: propertyNames, at: &here, quiet: quiet)
                } catch {
                    throw Self.fail(quiet, path, "has a property name \(Self.quoted(name)) that is not allowed: \(error.message)")
                }
            }
            let schema: SchemaNode
            if let property = node.properties[name] {
                schema = property
            } else {
                switch node.additional {
                case .forbidden: throw Self.fail(quiet, path, "has no property `\(name)`")
                case .allowed: continue
                case .schema(let extra): schema = extra
                }
            }
            path.append(name)
            try check(member, against: schema, at: &path, quiet: quiet)
            path.removeLast()
        }
    }

    private func checkNumber(_ text: String, _ node: SchemaNode, at path: [String], quiet: Bool) throws(FerryServerError) {
        let isInteger = StrictJSON.isIntegerLiteral(text)
        let integer = isInteger ? Int64(text) : nil
        if node.int64, isInteger, integer == nil {
            throw Self.fail(quiet, path, "does not fit in 64 bits")
        }
        guard node.minimum != nil || node.maximum != nil else { return }
        let value = integer.map(Double.init) ?? Double(text) ?? .nan
        if let least = node.minimum, value < least.value || value.isNaN {
            throw Self.fail(quiet, path, "must be at least \(least.text)")
        }
        if let most = node.maximum, value > most.value || value.isNaN {
            throw Self.fail(quiet, path, "must be at most \(most.text)")
        }
    }

    /// The error for a mismatch; while a `oneOf` tries its options
    /// (`quiet`), one without words, as nobody reads it.
    private static func fail(_ quiet: Bool, _ path: [String], _ message: @autoclosure () -> String) -> FerryServerError {
        quiet ? quietMismatch : FerryServerError(.badRequest, "\(describe(path)) \(message())")
    }

    private static let quietMismatch = FerryServerError(.badRequest, "no match")

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

/// One schema of the document, compiled: its rules as fields, its `$ref`s
/// resolved, its pattern ready to match, so checking a body does no
/// dictionary lookup of rule names.
final class SchemaNode: @unchecked Sendable {
    // @unchecked: every field is set once, while compiling, before the node is shared.
    struct TypeSet: OptionSet, Sendable {
        let rawValue: UInt8
        static let null = TypeSet(rawValue: 1), boolean = TypeSet(rawValue: 2), integer = TypeSet(rawValue: 4)
        static let number = TypeSet(rawValue: 8), string = TypeSet(rawValue: 16), array = TypeSet(rawValue: 32)
        static let object = TypeSet(rawValue: 64)
        static let named: [(String, TypeSet)] = [
            ("null", .null), ("boolean", .boolean), ("integer", .integer), ("number", .number),
            ("string", .string), ("array", .array), ("object", .object),
        ]

        init(rawValue: UInt8) { self.rawValue = rawValue }

        /// Whether a value of this type set passes `type` (an integer is a number too).
        func admits(_ value: JSONValue) -> Bool {
            let actual = TypeSet(value)
            return contains(actual) || (actual == .integer && contains(.number))
        }

        init(_ value: JSONValue) {
            switch value {
            case .null: self = .null
            case .bool: self = .boolean
            case .number(let text): self = StrictJSON.isIntegerLiteral(text) ? .integer : .number
            case .string: self = .string
            case .array: self = .array
            case .object: self = .object
            }
        }

        var names: [String] { Self.named.filter { contains($0.1) }.map(\.0) }
    }

    enum Additional {
        case allowed
        case forbidden
        case schema(SchemaNode)
    }

    struct Bound {
        var value: Double
        var text: String
    }

    var types: TypeSet?
    var enumValues: [JSONValue]?
    var oneOf: [SchemaNode]?
    /// `if` and `then`: a value that matches the condition must match the consequence.
    var condition: SchemaNode?
    var consequence: SchemaNode?
    var uniqueItems = false
    var properties: [String: SchemaNode] = [:]
    var required: [String] = []
    var additional = Additional.allowed
    var propertyNames: SchemaNode?
    var maxProperties: Int?
    var items: SchemaNode?
    var minItems: Int?
    var maxItems: Int?
    var minLength: Int?
    var maxLength: Int?
    var pattern: CompiledPattern?
    var base64 = false
    var minimum: Bound?
    var maximum: Bound?
    var int64 = false
    var description: String?
}

/// Turns the document's schemas into ``SchemaNode``s, each component once.
struct SchemaCompiler {
    let schemas: JSONObject
    private var compiled: [String: SchemaNode] = [:]

    init(schemas: JSONObject) {
        self.schemas = schemas
    }

    mutating func component(_ name: String) throws -> SchemaNode {
        if let node = compiled[name] { return node }
        guard let schema = schemas[name] else { throw FerryServerError(.internalError, "openapi.json has no schema \(name)") }
        let node = SchemaNode()
        compiled[name] = node  // before its parts, so a schema that refers to itself ends
        try fill(node, from: schema)
        return node
    }

    mutating func node(_ schema: JSONValue) throws -> SchemaNode {
        if case .object(let rules) = schema, rules.count == 1, case .string(let reference)? = rules["$ref"] {
            return try component(String(reference.split(separator: "/").last ?? ""))
        }
        let node = SchemaNode()
        try fill(node, from: schema)
        return node
    }

    private mutating func fill(_ node: SchemaNode, from schema: JSONValue) throws {
        guard case .object(let rules) = schema else { return }
        if case .string(let reference)? = rules["$ref"] {
            // A reference beside other rules: the referenced rules first, then these.
            let name = String(reference.split(separator: "/").last ?? "")
            guard case .object(var merged)? = schemas[name] else { throw FerryServerError(.internalError, "openapi.json has no schema \(name)") }
            for (key, value) in rules where key != "$ref" { merged[key] = value }
            try fill(node, from: .object(merged))
            return
        }
        func int(_ key: String) -> Int? {
            if case .number(let text)? = rules[key] { Int(text) } else { nil }
        }
        func bound(_ key: String) -> SchemaNode.Bound? {
            if case .number(let text)? = rules[key], let value = Double(text) { SchemaNode.Bound(value: value, text: text) } else { nil }
        }
        switch rules["type"] {
        case .string(let name)?:
            node.types = SchemaNode.TypeSet.named.first { $0.0 == name }?.1
        case .array(let names)?:
            node.types = names.reduce(into: SchemaNode.TypeSet()) { set, name in
                if case .string(let name) = name, let type = SchemaNode.TypeSet.named.first(where: { $0.0 == name })?.1 { set.insert(type) }
            }
        default:
            break
        }
        if case .array(let values)? = rules["enum"] { node.enumValues = values }
        if case .array(let options)? = rules["oneOf"] { node.oneOf = try options.map { try self.node($0) } }
        if let condition = rules["if"], let consequence = rules["then"] {
            node.condition = try self.node(condition)
            node.consequence = try self.node(consequence)
        }
        node.uniqueItems = rules["uniqueItems"] == .bool(true)
        if case .object(let properties)? = rules["properties"] {
            for (name, property) in properties { node.properties[name] = try self.node(property) }
        }
        if case .array(let required)? = rules["required"] {
            node.required = required.compactMap { if case .string(let name) = $0 { name } else { nil } }
        }
        switch rules["additionalProperties"] {
        case .bool(false)?: node.additional = .forbidden
        case .bool(true)?, nil: node.additional = .allowed
        case let extra?: node.additional = .schema(try self.node(extra))
        }
        if let names = rules["propertyNames"] { node.propertyNames = try self.node(names) }
        if let items = rules["items"] { node.items = try self.node(items) }
        node.maxProperties = int("maxProperties")
        node.minItems = int("minItems")
        node.maxItems = int("maxItems")
        node.minLength = int("minLength")
        node.maxLength = int("maxLength")
        if case .string(let pattern)? = rules["pattern"] { node.pattern = try CompiledPattern(pattern) }
        node.base64 = rules["contentEncoding"] == .string("base64")
        node.minimum = bound("minimum")
        node.maximum = bound("maximum")
        node.int64 = rules["format"] == .string("int64")
        if case .string(let text)? = rules["description"] { node.description = text }
    }
}
