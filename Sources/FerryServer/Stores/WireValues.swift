import Foundation

/// The values JSON cut out of a `cells` column written by
/// ``StoreCoding/cellsJSON(_:)``, without decoding it: each cell is
/// `"<column>":{"clientID":"…","hlc":N,"value":V,"version":N}`, and `V` is
/// one token, a string, a tagged object holding one string, or a number or
/// null. `nil` for any other layout (the caller then decodes the cells).
///
/// ```swift
/// let wire = WireValues(cells: #"{"t":{"clientID":"c","hlc":5,"value":"x","version":2}}"#)
/// wire?.values   // {"t":"x"}
/// wire?.hlc      // 5
/// ```
struct WireValues: Equatable {
    var values: String
    var hlc: Int64?

    init?(cells: String) {
        var cells = cells
        var hlc: Int64?
        guard
            let values = try? cells.withUTF8({ bytes in
                try String(unsafeUninitializedCapacity: max(bytes.count, 1)) { out in
                    guard let cut = Cutter().cut(bytes, into: out.baseAddress!) else { throw NotThisLayout() }
                    hlc = cut.hlc
                    return cut.count
                }
            })
        else { return nil }
        self.values = values
        self.hlc = hlc
    }

    private struct NotThisLayout: Error {}
}

extension WireValues {
    /// Cuts values out of stored cells (``cut(_:into:)``); one serves a
    /// whole page. Its keys are its own stored words, not global constants,
    /// so the hot loop loads them from the cutter.
    struct Cutter {
        private let client = Key(":{\"clientID\":")
        private let hlc = Key(",\"hlc\":")
        private let value = Key(",\"value\":")
        private let version = Key(",\"version\":")

        init() {}

        /// Writes the values of `cells` into `out`, which holds at least
        /// `cells.count` bytes (the values are never longer than the cells),
        /// returning how many bytes it wrote and the newest stamp; `nil` for
        /// any other layout.
        ///
        /// A pulled page runs this for every row it sends: it walks the bytes
        /// once, comparing the fixed keys as eight-byte words.
        func cut(_ cells: UnsafeBufferPointer<UInt8>, into out: UnsafeMutablePointer<UInt8>) -> (count: Int, hlc: Int64?)? {
            guard let base = cells.baseAddress else { return nil }
            let count = cells.count
            guard count >= 2, base[0] == UInt8(ascii: "{"), base[count - 1] == UInt8(ascii: "}") else { return nil }
            // The last byte the cells' own closing brace: every scan below stops before it.
            let end = count - 1
            var written = 0
            out[0] = UInt8(ascii: "{")
            written = 1
            var index = 1
            var newest: Int64?

            /// The end (exclusive) of the JSON string starting at `position`, before `end`: the first
            /// quote after it (found with `memchr`) behind an even run of backslashes.
            func stringEnd(from position: Int) -> Int? {
                guard position < end, base[position] == UInt8(ascii: "\"") else { return nil }
                var cursor = position + 1
                while cursor < end, let found = memchr(base + cursor, Int32(UInt8(ascii: "\"")), end - cursor) {
                    let quote = UnsafeRawPointer(found) - UnsafeRawPointer(base)
                    var slash = quote - 1
                    while slash > position, base[slash] == UInt8(ascii: "\\") { slash -= 1 }
                    if (quote - 1 - slash) % 2 == 0 { return quote + 1 }
                    cursor = quote + 1
                }
                return nil
            }

            while index < end {
                if written > 1 {
                    guard base[index] == UInt8(ascii: ",") else { return nil }
                    out[written] = UInt8(ascii: ",")
                    written += 1
                    index += 1
                }
                guard let nameEnd = stringEnd(from: index), client.matches(base, at: nameEnd, before: end),
                    let clientEnd = stringEnd(from: nameEnd + client.count), hlc.matches(base, at: clientEnd, before: end)
                else { return nil }
                (out + written).update(from: base + index, count: nameEnd - index)
                written += nameEnd - index
                out[written] = UInt8(ascii: ":")
                written += 1

                var cursor = clientEnd + hlc.count
                let negative = cursor < end && base[cursor] == UInt8(ascii: "-")
                if negative { cursor += 1 }
                let digitsStart = cursor
                var magnitude: Int64 = 0
                while cursor < end, base[cursor] &- UInt8(ascii: "0") < 10 {
                    let (times, overflow) = magnitude.multipliedReportingOverflow(by: 10)
                    let (sum, carry) = times.addingReportingOverflow(Int64(base[cursor] &- UInt8(ascii: "0")))
                    guard !overflow, !carry else { return nil }
                    magnitude = sum
                    cursor += 1
                }
                guard cursor > digitsStart, value.matches(base, at: cursor, before: end) else { return nil }
                let stamp = negative ? -magnitude : magnitude
                newest = max(newest ?? stamp, stamp)

                // The value, one token: a string, a tagged object (`{"real":"…"}`, `{"blob":"…"}`), or a
                // number or null, which holds no quote, brace, bracket, colon or space and ends at a comma
                // (`memchr`: the only scan a long value needs besides its string's).
                let valueStart = cursor + value.count
                guard valueStart < end else { return nil }
                let valueEnd: Int
                switch base[valueStart] {
                case UInt8(ascii: "\""):
                    guard let closing = stringEnd(from: valueStart) else { return nil }
                    valueEnd = closing
                case UInt8(ascii: "{"):
                    guard let tagEnd = stringEnd(from: valueStart + 1), tagEnd < end, base[tagEnd] == UInt8(ascii: ":"),
                        let contentEnd = stringEnd(from: tagEnd + 1), contentEnd < end, base[contentEnd] == UInt8(ascii: "}")
                    else { return nil }
                    valueEnd = contentEnd + 1
                default:
                    guard let comma = memchr(base + valueStart, Int32(UInt8(ascii: ",")), end - valueStart) else { return nil }
                    valueEnd = UnsafeRawPointer(comma) - UnsafeRawPointer(base)
                    for byte in UnsafeBufferPointer(start: base + valueStart, count: valueEnd - valueStart) {
                        switch byte {
                        case UInt8(ascii: "\""), UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "["), UInt8(ascii: "]"),
                            UInt8(ascii: ":"), UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                            return nil
                        default: continue
                        }
                    }
                }
                guard version.matches(base, at: valueEnd, before: end) else { return nil }
                guard valueEnd > valueStart else { return nil }
                (out + written).update(from: base + valueStart, count: valueEnd - valueStart)
                written += valueEnd - valueStart

                cursor = valueEnd + version.count
                while cursor < end, base[cursor] &- UInt8(ascii: "0") < 10 { cursor += 1 }
                guard cursor < end, base[cursor] == UInt8(ascii: "}") else { return nil }
                index = cursor + 1
            }
            guard index == end else { return nil }
            out[written] = UInt8(ascii: "}")
            return (written + 1, newest)
        }

    }

    /// A key of 7 to 16 bytes, as its first and last eight bytes in words
    /// (a 7-byte key: its bytes and a mask over them).
    private struct Key {
        let count: Int
        let head: UInt64
        let tail: UInt64
        let headMask: UInt64

        init(_ text: StaticString) {
            let bytes = Array(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
            precondition((7...16).contains(bytes.count), "a key of 7 to 16 bytes")
            count = bytes.count
            func word(_ eight: [UInt8]) -> UInt64 { eight.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) } }
            let padded = bytes + [0]
            head = word(Array(padded[0..<8]))
            headMask = word((0..<8).map { $0 < bytes.count ? 0xFF : 0 })
            tail = word(Array(padded[(max(bytes.count, 8) - 8)..<max(bytes.count, 8)]))
        }

        /// Whether the key stands at `position`, wholly before `end` (the
        /// buffer holds at least one byte past `end`, so eight bytes read at a
        /// 7-byte key's place stay inside it).
        @inline(__always)
        func matches(_ base: UnsafePointer<UInt8>, at position: Int, before end: Int) -> Bool {
            guard position + count <= end else { return false }
            let raw = UnsafeRawPointer(base + position)
            guard raw.loadUnaligned(as: UInt64.self) & headMask == head else { return false }
            return count < 8 || raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self) == tail
        }
    }
}
