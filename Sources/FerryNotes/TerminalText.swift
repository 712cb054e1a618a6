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

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 && scalar.value != 0x0A || (0x7F...0x9F).contains(scalar.value)
    }
}
