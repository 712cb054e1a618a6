import FerryProtocol

/// JSON written into memory reserved for it beforehand, with no check of
/// room per write: the writer of a row's cells adds up the row's length
/// (a plain string's bytes and its quotes, ``fixedPerCell`` per cell, and
/// what ``JSONText`` spelled ahead: strings with a byte to escape, reals,
/// blobs), reserves it once, and writes it. Writing through `ByteBuffer`
/// a piece at a time checked its room and its uniqueness on each of the
/// twenty-odd pieces of a cell: most of the cost of the JSON.
///
/// ```swift
/// out.writeWithUnsafeMutableBytes(minimumWritableBytes: name.utf8.count + 2) { memory in
///     var json = BoundedJSONWriter(memory: memory)
///     json.writeString(name, spelled: nil)   // "name": nothing in it to escape
///     return json.count
/// }
/// ```
struct BoundedJSONWriter {
    /// The most a cell takes but for its key, its client id and its value:
    /// the member names, punctuation, and two integers of at most 20 bytes.
    static let fixedPerCell = 96

    /// `text` as a JSON string literal, as ``JSONText/appendString(_:to:)``
    /// spells it, when it has a byte to escape; `nil` when it goes as it is,
    /// between quotes (``writeString(_:spelled:)``).
    static func spelled(_ text: String) -> String? {
        var text = text
        guard text.withUTF8({ $0.contains(where: JSONText.escapes) }) else { return nil }
        var literal = ""
        JSONText.appendString(text, to: &literal)
        return literal
    }

    private let memory: UnsafeMutableRawBufferPointer
    /// Bytes written so far.
    private(set) var count = 0

    init(memory: UnsafeMutableRawBufferPointer) {
        self.memory = memory
    }

    mutating func write(_ text: StaticString) {
        precondition(count + text.utf8CodeUnitCount <= memory.count, "a JSON writer wrote past the length it was given")
        text.withUTF8Buffer { copy(UnsafeRawBufferPointer($0)) }
    }

    /// `text`'s bytes as they are: JSON ``JSONText`` spelled.
    mutating func writeRaw(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            precondition(count + bytes.count <= memory.count, "a JSON writer wrote past the length it was given")
            copy(UnsafeRawBufferPointer(bytes))
        }
    }

    /// `text` as a JSON string literal: `spelled`, its literal from
    /// ``spelled(_:)``, or when that is `nil`, its bytes between quotes.
    mutating func writeString(_ text: String, spelled: String?) {
        if let spelled { return writeRaw(spelled) }
        var text = text
        text.withUTF8 { bytes in
            precondition(count + bytes.count + 2 <= memory.count, "a JSON writer wrote past the length it was given")
            write("\"")
            copy(UnsafeRawBufferPointer(bytes))
            write("\"")
        }
    }

    /// An integer in decimal, as `String(value)` spells it.
    mutating func writeDecimal(_ value: Int64) {
        precondition(count + 20 <= memory.count, "a JSON writer wrote past the length it was given")
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { scratch in
            var magnitude = value.magnitude
            var start = scratch.count
            repeat {
                start -= 1
                scratch[start] = UInt8(truncatingIfNeeded: magnitude % 10) + 0x30
                magnitude /= 10
            } while magnitude > 0
            if value < 0 { write("-") }
            copy(UnsafeRawBufferPointer(rebasing: scratch[start...]))
        }
    }

    private mutating func copy(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        (memory.baseAddress! + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }
}
