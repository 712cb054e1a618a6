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
        let longest = wanted.map(\.count).max() ?? 0
        let scalars = text.unicodeScalars
        var tokens: [Range<String.UnicodeScalarView.Index>] = []  // the last few, then the window's
        var found = false
        var cut = false
        var index = scalars.startIndex
        while index < scalars.endIndex {
            guard isTokenScalar(scalars[index]) else {
                index = scalars.index(after: index)
                continue
            }
            let start = index
            while index < scalars.endIndex, isTokenScalar(scalars[index]) { index = scalars.index(after: index) }
            tokens.append(start..<index)
            if found {
                if tokens.count >= around {
                    cut = index < scalars.endIndex
                    break
                }
            } else if matches(scalars[start..<index], wanted, longest) {
                found = true
            } else if tokens.count > 4 {
                tokens.removeFirst()  // up to four words before the match
            }
        }
        guard found, let lower = tokens.first?.lowerBound, let last = tokens.last?.upperBound else { return nil }
        // Cut after the window's last word, or at the text's end with what follows it.
        let upper = cut ? last : scalars.endIndex
        var out = ""
        var cursor = lower
        for token in tokens {
            out += String(String.UnicodeScalarView(scalars[cursor..<token.lowerBound]))
            let word = String(String.UnicodeScalarView(scalars[token]))
            out += matches(scalars[token], wanted, longest) ? highlight.0 + word + highlight.1 : word
            cursor = token.upperBound
        }
        out += String(String.UnicodeScalarView(scalars[cursor..<upper]))
        return (lower > scalars.startIndex ? "…" : "") + out + (upper < scalars.endIndex ? "…" : "")
    }

    /// Whether the token starts with one of `wanted` (folded), folding only
    /// its first `longest` scalars.
    private static func matches(_ token: Substring.UnicodeScalarView, _ wanted: [String], _ longest: Int) -> Bool {
        let head = fold(String(String.UnicodeScalarView(token.prefix(longest + 2))))
        return wanted.contains { head.hasPrefix($0) }
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
