import GRDB

/// Quoting for the few places SQL text cannot take bound values: the DDL of
/// Ferry's triggers (a trigger body is stored as text) and PRAGMA arguments.
@usableFromInline package enum SQLText {
    /// `"name"`, with embedded double quotes doubled.
    package static func identifier(_ name: String) -> String {
        quoted(name, by: "\"")
    }

    /// `rows` parenthesized lists of `width` parameters, comma-separated:
    /// `(?,?),(?,?)` for 2 and 2; with `width` 0, `rows` bare marks: `?,?,?`.
    /// Built without joining an array (it runs for every chunk of a page).
    @usableFromInline package static func parameters(rows: Int, width: Int = 0) -> String {
        guard rows > 0 else { return "" }
        let one = width == 0 ? "?" : "(" + String(repeating: "?,", count: width - 1) + "?)"
        return String(repeating: one + ",", count: rows - 1) + one
    }

    /// `'text'`, with embedded single quotes doubled.
    package static func literal(_ text: String) -> String {
        quoted(text, by: "'")
    }

    /// `text` between `quote`s, each `quote` inside doubled (without
    /// Foundation: this runs for every row a page applies).
    private static func quoted(_ text: String, by quote: Character) -> String {
        var out = String(quote)
        out.reserveCapacity(text.utf8.count + 2)
        for character in text {
            if character == quote { out.append(quote) }
            out.append(character)
        }
        out.append(quote)
        return out
    }

    /// A JSON string (quotes and backslashes escaped), for column names in
    /// the JSON array of changed columns.
    package static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
