import FerryProtocol
import Foundation
import NIOCore

/// JSON written straight into a buffer, byte for byte what ``JSONText``
/// writes into a string: for the answers and statements a store writes
/// thousands of values into, with no string of each value's own.
///
/// ```swift
/// var out = ByteBuffer()
/// out.writeJSONString("a \"quote\"")   // "a \"quote\""
/// ```
extension ByteBuffer {
    /// `text` as a JSON string literal, as ``JSONText/appendString(_:to:)``
    /// writes it: straight from its bytes when nothing needs escaping.
    package mutating func writeJSONString(_ text: String) {
        var text = text
        // One look at the bytes, written from where they are: checked, then copied as a string again, they cost
        // twice as much.
        let plain = text.withUTF8 { bytes in
            guard !bytes.contains(where: JSONText.escapes) else { return false }
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
}
