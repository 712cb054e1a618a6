import Foundation

/// The few words around a search's first match in a note's text, matches
/// marked.
///
/// FTS5 finds the notes; the snippet is built here, in one pass that stops
/// at the first match. FTS5's own `snippet()` and `highlight()` are
/// quadratic in a note that matches often (2.5 minutes for a 5 MB note;
/// `highlight()` alone 18 s), so neither is used.
///
/// Words are matched as FTS5 matches them here: each query word is a prefix
/// of a token (a run of letters and digits), case and accents ignored.
///
/// ```swift
/// SearchSnippet.make(text: "coffee at the café on the corner", words: ["cafe"], highlight: ("[", "]"))
/// // "coffee at the [café] on the corner"
/// ```
public enum SearchSnippet {
    /// `around` words, up to four of them before the first token a word of
    /// `words` starts, every matching token in it wrapped in `highlight`,
    /// `…` where the text was cut; `nil` when no token matches.
    public static func make(text: String, words: [String], highlight: (String, String), around: Int = 12) -> String? {
        let wanted = words.map(fold).filter { !$0.isEmpty }
        guard !wanted.isEmpty else { return nil }
        var text = text
        // Over the UTF-8 bytes: a note of megabytes is scanned in milliseconds.
        return text.withUTF8 { bytes in make(bytes, wanted: wanted, highlight: highlight, around: around) }
    }

    private static func make(_ bytes: UnsafeBufferPointer<UInt8>, wanted: [String], highlight: (String, String), around: Int) -> String? {
        let longest = wanted.map(\.utf8.count).max() ?? 0
        var tokens: [Range<Int>] = []  // the last few, then the window's
        var found = false
        var cut = false
        var index = 0
        while index < bytes.count {
            let (isToken, width) = tokenScalar(bytes, at: index)
            guard isToken else {
                index += width
                continue
            }
            let start = index
            index += width
            while index < bytes.count {
                let (more, width) = tokenScalar(bytes, at: index)
                guard more else { break }
                index += width
            }
            tokens.append(start..<index)
            if found {
                if tokens.count >= around {
                    cut = index < bytes.count
                    break
                }
            } else if matches(bytes, start..<index, wanted, longest) {
                found = true
            } else if tokens.count > 4 {
                tokens.removeFirst()  // up to four words before the match
            }
        }
        guard found, let lower = tokens.first?.lowerBound, let last = tokens.last?.upperBound else { return nil }
        // Cut after the window's last word, or at the text's end with what follows it.
        let upper = cut ? last : bytes.count
        func text(_ range: Range<Int>) -> String { String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self) }
        var out = ""
        var cursor = lower
        for token in tokens {
            out += text(cursor..<token.lowerBound)
            let word = text(token)
            out += matches(bytes, token, wanted, longest) ? highlight.0 + word + highlight.1 : word
            cursor = token.upperBound
        }
        out += text(cursor..<upper)
        return (lower > 0 ? "…" : "") + out + (upper < bytes.count ? "…" : "")
    }

    /// Whether the token starts with one of `wanted` (folded), folding only
    /// its first `longest` scalars.
    ///
    /// Compared byte by byte with no allocation while both sides are ASCII
    /// (a long note has hundreds of thousands of tokens); folded by
    /// Foundation only when an accent or another script is in the way.
    private static func matches(_ bytes: UnsafeBufferPointer<UInt8>, _ token: Range<Int>, _ wanted: [String], _ longest: Int) -> Bool {
        var needsFolding = false
        for word in wanted {
            var position = token.lowerBound
            var equal = true
            for byte in word.utf8 {
                guard byte < 0x80, position < token.upperBound, bytes[position] < 0x80 else {
                    needsFolding = needsFolding || byte >= 0x80 || position < token.upperBound
                    equal = false
                    break
                }
                let value = bytes[position]
                if ((0x41...0x5A).contains(value) ? value + 0x20 : value) != byte {
                    equal = false
                    break
                }
                position += 1
            }
            if equal { return true }
        }
        guard needsFolding else { return false }
        // The token's first `longest + 2` scalars, folded.
        var end = token.lowerBound
        var scalars = 0
        while end < token.upperBound, scalars < longest + 2 {
            end += tokenScalar(bytes, at: end).width
            scalars += 1
        }
        let head = fold(String(decoding: UnsafeBufferPointer(rebasing: bytes[token.lowerBound..<min(end, token.upperBound)]), as: UTF8.self))
        return wanted.contains { head.hasPrefix($0) }
    }

    /// Whether the scalar at `index` makes tokens, and how many bytes it takes.
    private static func tokenScalar(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> (isToken: Bool, width: Int) {
        let lead = bytes[index]
        if lead < 0x80 {
            return ((0x30...0x39).contains(lead) || (0x41...0x5A).contains(lead) || (0x61...0x7A).contains(lead), 1)
        }
        let width = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1
        guard width > 1, index + width <= bytes.count else { return (false, 1) }
        var value = UInt32(lead) & (0xFF >> (width + 1))
        for offset in 1..<width { value = value << 6 | UInt32(bytes[index + offset] & 0x3F) }
        guard let scalar = Unicode.Scalar(value) else { return (false, width) }
        return (isTokenScalar(scalar), width)
    }

    /// Lowercase, accents removed: ASCII by arithmetic, the rest by Foundation.
    static func fold(_ text: String) -> String {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return text.lowercased() }
        return text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil).lowercased()
    }

    /// Letters and digits make tokens, as FTS5's unicode61 tokenizer has them.
    private static func isTokenScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case 0..<0x80: return false
        default:
            let properties = scalar.properties
            return properties.isAlphabetic || properties.numericType != nil
        }
    }
}
