/// Base64url without padding (RFC 4648, section 5), as pull cursors and
/// console sessions carry it: read and written byte by byte, without
/// Foundation's string replacements (a pull's largest cost after the store,
/// once a quiet scope needed no read).
///
/// ```swift
/// let text = Base64URL.encode(Array("c2|e|user:alice|42".utf8))   // "YzJ8ZXx1c2VyOmFsaWNlfDQy"
/// let bytes = Base64URL.decode(text[...])                        // the bytes again; nil for a bad character
/// ```
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Each byte's 6-bit value, or 0xFF for a byte outside the alphabet.
    private static let values: [UInt8] = {
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in alphabet.enumerated() { values[Int(byte)] = UInt8(value) }
        return values
    }()

    static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next(), third = iterator.next()
            let group = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
            out.append(alphabet[Int(group >> 18 & 63)])
            out.append(alphabet[Int(group >> 12 & 63)])
            if second != nil { out.append(alphabet[Int(group >> 6 & 63)]) }
            if third != nil { out.append(alphabet[Int(group & 63)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of `text`, or `nil` when it is empty, holds a character
    /// outside the alphabet or padding, or has a length no encoding gives.
    static func decode(_ text: Substring) -> [UInt8]? {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count * 3 / 4)
        var group: UInt32 = 0, count = 0
        for byte in utf8 {
            let value = values[Int(byte)]
            guard value != 0xFF else { return nil }
            group = group << 6 | UInt32(value)
            count += 1
            if count == 4 {
                out.append(UInt8(group >> 16 & 0xFF))
                out.append(UInt8(group >> 8 & 0xFF))
                out.append(UInt8(group & 0xFF))
                group = 0
                count = 0
            }
        }
        switch count {
        case 2: out.append(UInt8(group >> 4 & 0xFF))
        case 3:
            out.append(UInt8(group >> 10 & 0xFF))
            out.append(UInt8(group >> 2 & 0xFF))
        default: break
        }
        return out
    }
}
