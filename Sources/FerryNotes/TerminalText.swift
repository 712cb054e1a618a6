/// Text from the database made safe to print on a terminal: every control
/// character shown instead of obeyed, so a collaborator's note titled
/// `"Evil \e[31mRED\e]0;pwned\a"` cannot recolour another user's listing,
/// rename their window or write their clipboard (OSC 52).
///
/// C0 controls and DEL print in caret notation (`ESC` as `^[`, `BEL` as
/// `^G`), C1 controls as `\u{9B}`-style escapes. Newlines are kept where
/// the text is shown whole (`show`) and a tab too; in one-line places both
/// become spaces first.
///
/// ```swift
/// TerminalText.safe("Evil \u{1B}[31mRED")   // "Evil ^[[31mRED"
/// ```
public enum TerminalText {
    /// `text` with every control character but newline and tab made visible.
    public static func safe(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A, 0x09:
                out.append(scalar)
            case 0x00...0x1F:
                out.append("^")
                out.append(Unicode.Scalar(scalar.value + 0x40)!)
            case 0x7F:
                out.append(contentsOf: "^?".unicodeScalars)
            case 0x80...0x9F:
                out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            default:
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// `text` on one line: newlines and tabs become spaces, the rest as ``safe(_:)``.
    public static func line(_ text: String) -> String {
        safe(text).replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\t", with: " ")
    }

    /// Encoded JSON with DEL and C1 controls, which JSON leaves raw, written
    /// as `\u` escapes: the same data, nothing a terminal obeys.
    public static func jsonSafe(_ json: String) -> String {
        guard json.unicodeScalars.contains(where: { (0x7F...0x9F).contains($0.value) }) else { return json }
        var out = String.UnicodeScalarView()
        for scalar in json.unicodeScalars {
            if (0x7F...0x9F).contains(scalar.value) {
                out.append(contentsOf: "\\u00\(String(scalar.value, radix: 16))".unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// The terminal cells `text` takes: two for a wide character (CJK,
    /// fullwidth forms, an emoji shown as a picture such as ☕), none for a
    /// combining mark or a zero-width character, one for the rest. Counted
    /// a character (grapheme) at a time, as terminals draw them.
    ///
    /// ```swift
    /// TerminalText.cells("漢字 ☕")   // 7
    /// ```
    public static func cells(_ text: String) -> Int {
        text.reduce(0) { $0 + cells(of: $1) }
    }

    /// `text` in exactly `width` cells: cut with `…` where it is longer,
    /// padded with spaces where it is shorter (a wide character that would
    /// straddle the edge is left out and its cell padded).
    ///
    /// ```swift
    /// TerminalText.fit("漢字漢字", 5)   // "漢字…"
    /// ```
    public static func fit(_ text: String, _ width: Int) -> String {
        let flat = line(text)
        let total = cells(flat)
        guard total > width else { return flat + String(repeating: " ", count: max(0, width - total)) }
        var kept = ""
        var used = 0
        for character in flat {
            let size = cells(of: character)
            if used + size > width - 1 { break }
            kept.append(character)
            used += size
        }
        return width <= 0 ? "" : kept + "…" + String(repeating: " ", count: max(0, width - 1 - used))
    }

    static func cells(of character: Character) -> Int {
        guard let first = character.unicodeScalars.first else { return 0 }
        if character.unicodeScalars.contains(where: { $0.value == 0xFE0F }) || first.properties.isEmojiPresentation { return 2 }
        switch first.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if first.value == 0x200B { return 0 }
        return isWide(first.value) ? 2 : 1
    }

    /// East Asian Wide and Fullwidth ranges (Unicode's EastAsianWidth W and F).
    private static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
            0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60,
            0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return true
        default:
            return false
        }
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 && scalar.value != 0x0A || (0x7F...0x9F).contains(scalar.value)
    }
}
