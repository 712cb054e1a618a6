import FerryProtocol
import Foundation
import NIOCore

/// JSON written straight into a buffer, byte for byte what ``JSONText``
/// writes into a string: for the answers and statements a store writes
/// thousands of values into, with no string of each value's own.
///
/// ```swift
/// var out = ByteBuffer()
/// out.writeJSONValue(.text("a \"quote\""))   // "a \"quote\""
/// out.writeDecimal(-42)                      // -42
/// ```
extension ByteBuffer {
    /// `text` as a JSON string literal, as ``JSONText/appendString(_:to:)``
    /// writes it: straight from its bytes when nothing needs escaping.
    package mutating func writeJSONString(_ text: String) {
        var text = text
        // One look at the bytes, written from where they are: checked, then copied as a string again,
        // this was a third of writing a row's cells.
        let plain = text.withUTF8 { bytes in
            guard !bytes.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) else { return false }
            reserveCapacity(minimumWritableBytes: bytes.count + 2)
            writeInteger(UInt8(ascii: "\""))
            writeBytes(bytes)
            writeInteger(UInt8(ascii: "\""))
            return true
        }
        guard plain else {
            var escaped = ""
            JSONText.appendString(text, to: &escaped)
            writeString(escaped)
            return
        }
    }

    /// A value as ``JSONText/appendValue(_:to:)`` writes it.
    package mutating func writeJSONValue(_ value: ColumnValue) {
        switch value {
        case .null: writeStaticString("null")
        case .integer(let integer): writeDecimal(integer)
        case .text(let text): writeJSONString(text)
        case .real(let real):
            writeStaticString("{\"real\":")
            writeJSONString(String(real))
            writeStaticString("}")
        case .blob(let data):
            writeStaticString("{\"blob\":\"")
            writeString(data.base64EncodedString())
            writeStaticString("\"}")
        }
    }

    /// An integer in decimal, as `String(value)` spells it, without making that string.
    package mutating func writeDecimal(_ value: Int64) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var magnitude = value.magnitude
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(truncatingIfNeeded: magnitude % 10) + 0x30
                magnitude /= 10
            } while magnitude > 0
            if value < 0 { writeStaticString("-") }
            writeBytes(UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }
}
