/// JSON written into memory reserved for it beforehand, with no check of
/// room per write: the writer of a row's cells bounds the row's length
/// (``bound(ofString:)`` per string, ``fixedPerCell`` per cell), reserves
/// it once, and writes every byte as ``JSONText`` would. Writing through
/// `ByteBuffer` a piece at a time checked its room and its uniqueness on
/// each of the twenty-odd pieces of a cell: most of the cost of the JSON.
///
/// ```swift
/// out.writeWithUnsafeMutableBytes(minimumWritableBytes: 2 + BoundedJSONWriter.bound(ofString: name)) { memory in
///     var json = BoundedJSONWriter(memory: memory)
///     json.writeString(name)   // "name", escaped as JSONText escapes it
///     return json.count
/// }
/// ```
struct BoundedJSONWriter {
    /// The most a cell takes but for its key, its client id and its value:
    /// the member names, punctuation, and two integers of at most 20 bytes.
    static let fixedPerCell = 96

    /// The most `text` takes as a JSON string literal: each byte escaped as
    /// `\u00XX` at worst, and the quotes.
    static func bound(ofString text: String) -> Int {
        text.utf8.count * 6 + 2
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

    /// `text`'s bytes as they are (base64, a number spelled): nothing to escape.
    mutating func writeRaw(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            precondition(count + bytes.count <= memory.count, "a JSON writer wrote past the length it was given")
            copy(UnsafeRawBufferPointer(bytes))
        }
    }

    /// `text` as a JSON string literal, as ``JSONText/appendString(_:to:)``
    /// writes it: quotes, backslashes and control characters escaped, every
    /// other byte as it is.
    mutating func writeString(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            precondition(count + bytes.count * 6 + 2 <= memory.count, "a JSON writer wrote past the length it was given")
            put(0x22)
            guard bytes.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) else {
                copy(UnsafeRawBufferPointer(bytes))
                put(0x22)
                return
            }
            for byte in bytes {
                switch byte {
                case 0x22, 0x5C:
                    put(0x5C)
                    put(byte)
                case 0x0A:
                    put(0x5C)
                    put(UInt8(ascii: "n"))
                case 0x0D:
                    put(0x5C)
                    put(UInt8(ascii: "r"))
                case 0x09:
                    put(0x5C)
                    put(UInt8(ascii: "t"))
                case ..<0x20:
                    let hex: StaticString = "0123456789abcdef"
                    put(0x5C)
                    put(UInt8(ascii: "u"))
                    put(UInt8(ascii: "0"))
                    put(UInt8(ascii: "0"))
                    put(hex.utf8Start[Int(byte >> 4)])
                    put(hex.utf8Start[Int(byte & 0x0F)])
                default:
                    put(byte)
                }
            }
            put(0x22)
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
            if value < 0 { put(UInt8(ascii: "-")) }
            copy(UnsafeRawBufferPointer(rebasing: scratch[start...]))
        }
    }

    private mutating func put(_ byte: UInt8) {
        memory[count] = byte
        count += 1
    }

    private mutating func copy(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        (memory.baseAddress! + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }
}
