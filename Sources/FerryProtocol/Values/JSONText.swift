import Foundation

/// JSON text written directly, for the hot paths that write the wire's
/// values many thousands of times (a push's frozen payloads, a store's cells,
/// a pull page): the same JSON `JSONEncoder` gives a ``ColumnValue``, but for
/// the escaping of `/`, which no JSON reader tells apart.
///
/// ```swift
/// var out = ""
/// JSONText.appendValue(.real(1.5), to: &out)   // {"real":"1.5"}
/// ```
package enum JSONText {
    /// A value as the wire writes it: `null`, an integer, a string,
    /// `{"real":"…"}` or `{"blob":"…"}`.
    package static func appendValue(_ value: ColumnValue, to out: inout String) {
        switch value {
        case .null: out += "null"
        case .integer(let integer): out += String(integer)
        case .text(let text): appendString(text, to: &out)
        case .real(let real):
            out += "{\"real\":"
            appendString(String(real), to: &out)
            out += "}"
        case .blob(let data):
            out += "{\"blob\":\""
            out += data.base64EncodedString()
            out += "\"}"
        }
    }

    /// Whether `byte` is escaped in a JSON string literal: a quote, a
    /// backslash or a control character. Every other byte goes as it is.
    package static func escapes(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == 0x22 || byte == 0x5C
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped.
    package static func appendString(_ text: String, to out: inout String) {
        out += "\""
        var needsEscape = false
        for byte in text.utf8 where escapes(byte) {
            needsEscape = true
            break
        }
        guard needsEscape else {
            out += text
            out += "\""
            return
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// An object of named values, its keys sorted (as `JSONEncoder` with
    /// `.sortedKeys` writes it).
    package static func object(_ values: [String: ColumnValue]) -> String {
        var out = ""
        out.reserveCapacity(values.count * 24 + 2)
        appendObject(values, to: &out)
        return out
    }

    /// ``object(_:)``, appended to `out`.
    package static func appendObject(_ values: [String: ColumnValue], to out: inout String) {
        out += "{"
        // The members sorted once, with their values: looking each key up again cost about a twelfth.
        for (index, member) in values.sorted(by: { $0.key < $1.key }).enumerated() {
            if index > 0 { out += "," }
            appendString(member.key, to: &out)
            out += ":"
            appendValue(member.value, to: &out)
        }
        out += "}"
    }
}
