/// A JSON value as RFC 8259 writes it, read strictly: no trailing commas,
/// comments, single quotes, leading zeros, `NaN`, unpaired surrogates,
/// control characters in strings, repeated keys, or nesting deeper than
/// ``StrictJSON/maxDepth``. A number keeps its text, so "integer" can mean
/// an integer literal, not `1.0` or `1e3`.
///
/// ```swift
/// let value = try StrictJSON.parse(Array(#"{"a": [1, 2.5, "x"]}"#.utf8))
/// // .object(["a": .array([.number("1"), .number("2.5"), .string("x")])])
/// try StrictJSON.parse(Array("[1, 2,]".utf8))   // throws: "a value is expected at byte 6"
/// ```
indirect enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The JSON type name, as JSON Schema spells it ("integer" for an integer literal).
    var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number(let text): StrictJSON.isIntegerLiteral(text) ? "integer" : "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

enum StrictJSON {
    struct SyntaxError: Error, Equatable, CustomStringConvertible {
        var message: String
        var offset: Int
        var description: String { "\(message) at byte \(offset)" }
    }

    /// Deeper nesting is refused (no wire type needs more than a handful).
    static let maxDepth = 32

    static func parse(_ bytes: [UInt8]) throws(SyntaxError) -> JSONValue {
        var parser = Parser(bytes: bytes)
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.index == bytes.count else { throw parser.error("the JSON value ends before the body does") }
        return value
    }

    static func isIntegerLiteral(_ text: String) -> Bool {
        !text.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        func error(_ message: String) -> SyntaxError {
            SyntaxError(message: message, offset: index)
        }

        mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) throws(SyntaxError) -> JSONValue {
            guard index < bytes.count else { throw error("a value is expected") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            default: throw error("a value is expected")
            }
        }

        mutating func literal(_ word: String) throws(SyntaxError) {
            let utf8 = Array(word.utf8)
            guard index + utf8.count <= bytes.count, Array(bytes[index..<index + utf8.count]) == utf8 else {
                throw error("a value is expected")
            }
            index += utf8.count
        }

        mutating func object(depth: Int) throws(SyntaxError) -> JSONValue {
            guard depth <= StrictJSON.maxDepth else { throw error("nesting deeper than \(StrictJSON.maxDepth) levels") }
            index += 1
            var members = JSONObject()
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("a quoted property name is expected") }
                let keyStart = index
                let key = try string()
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("`:` is expected") }
                index += 1
                skipSpace()
                // One lookup per member: a repeated key is found as its value is stored.
                guard members.updateValue(try value(depth: depth), forKey: key) == nil else {
                    throw SyntaxError(message: "property \(String(reflecting: key)) appears twice", offset: keyStart)
                }
                skipSpace()
                guard index < bytes.count else { throw error("`,` or `}` is expected") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "}") else { throw error("`,` or `}` is expected") }
                index += 1
                return .object(members)
            }
        }

        mutating func array(depth: Int) throws(SyntaxError) -> JSONValue {
            guard depth <= StrictJSON.maxDepth else { throw error("nesting deeper than \(StrictJSON.maxDepth) levels") }
            index += 1
            var elements: [JSONValue] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                skipSpace()
                elements.append(try value(depth: depth))
                skipSpace()
                guard index < bytes.count else { throw error("`,` or `]` is expected") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "]") else { throw error("`,` or `]` is expected") }
                index += 1
                return .array(elements)
            }
        }

        mutating func number() throws(SyntaxError) -> String {
            let start = index
            func digits() -> Int {
                let from = index
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
                return index - from
            }
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count else { throw error("a digit is expected") }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
                if index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                    throw error("a number cannot have leading zeros")
                }
            } else if digits() == 0 {
                throw error("a digit is expected")
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { throw error("a digit is expected after `.`") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { throw error("a digit is expected in the exponent") }
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        mutating func string() throws(SyntaxError) -> String {
            index += 1
            // Built from runs of plain bytes between escapes: a string without escapes is its one run, made
            // straight from the bytes (appending a run's scalars one by one was most of a push's parse).
            var text = ""
            var runStart = index
            func flushRun(_ end: Int) throws(SyntaxError) {
                guard runStart < end else { return }
                // ASCII, the usual run, needs no validation: `String(validating:)` is generic code that looked up
                // type metadata on every call (a sixth of a push's reading).
                let start = runStart
                let validated = bytes.withUnsafeBufferPointer { buffer in
                    let run = UnsafeBufferPointer(rebasing: buffer[start..<end])
                    return run.allSatisfy { $0 < 0x80 } ? String(decoding: run, as: UTF8.self) : String(validating: run, as: UTF8.self)
                }
                guard let run = validated else {
                    throw SyntaxError(message: "a string is not valid UTF-8", offset: runStart)
                }
                if text.isEmpty { text = run } else { text.append(run) }
            }
            while true {
                guard index < bytes.count else { throw error("a string is not closed") }
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    try flushRun(index)
                    index += 1
                    return text
                }
                guard byte >= 0x20 else { throw error("a control character must be escaped in a string") }
                guard byte == UInt8(ascii: "\\") else {
                    index += 1
                    continue
                }
                try flushRun(index)
                index += 1
                guard index < bytes.count else { throw error("a string is not closed") }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""): text.unicodeScalars.append("\"")
                case UInt8(ascii: "\\"): text.unicodeScalars.append("\\")
                case UInt8(ascii: "/"): text.unicodeScalars.append("/")
                case UInt8(ascii: "b"): text.unicodeScalars.append("\u{08}")
                case UInt8(ascii: "f"): text.unicodeScalars.append("\u{0C}")
                case UInt8(ascii: "n"): text.unicodeScalars.append("\n")
                case UInt8(ascii: "r"): text.unicodeScalars.append("\r")
                case UInt8(ascii: "t"): text.unicodeScalars.append("\t")
                case UInt8(ascii: "u"):
                    let unit = try hex4()
                    if (0xD800...0xDBFF).contains(unit) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw error("an unpaired surrogate in a string")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("an unpaired surrogate in a string") }
                        text.unicodeScalars.append(Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!)
                    } else {
                        guard let scalar = Unicode.Scalar(unit) else { throw error("an unpaired surrogate in a string") }
                        text.unicodeScalars.append(scalar)
                    }
                default:
                    throw error("`\\\(Character(Unicode.Scalar(escaped)))` is not a JSON escape")
                }
                runStart = index
            }
        }

        mutating func hex4() throws(SyntaxError) -> UInt32 {
            guard index + 4 <= bytes.count else { throw error("`\\u` needs four hex digits") }
            var value: UInt32 = 0
            for byte in bytes[index..<index + 4] {
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: throw error("`\\u` needs four hex digits")
                }
                value = value << 4 | digit
            }
            index += 4
            return value
        }
    }
}
