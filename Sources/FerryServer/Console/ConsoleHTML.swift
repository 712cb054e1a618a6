import Foundation

/// Builds the console's HTML: text escaped at every interpolation unless
/// it is already ``ConsoleHTML``, so a row value or a user id never becomes markup.
///
/// ```swift
/// let cell: ConsoleHTML = "<td>\(value)</td>"   // value escaped
/// let row: ConsoleHTML = "<tr>\(cell)</tr>"     // cell kept as markup
/// ```
struct ConsoleHTML: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    private(set) var markup: String

    init(markup: String) { self.markup = markup }
    init(stringLiteral value: String) { markup = value }
    init(stringInterpolation: Interpolation) { markup = stringInterpolation.markup }

    var description: String { markup }

    struct Interpolation: StringInterpolationProtocol {
        var markup = ""
        init(literalCapacity: Int, interpolationCount: Int) { markup.reserveCapacity(literalCapacity * 2) }
        mutating func appendLiteral(_ literal: String) { markup += literal }
        mutating func appendInterpolation(_ html: ConsoleHTML) { markup += html.markup }
        mutating func appendInterpolation(_ htmls: [ConsoleHTML]) { for html in htmls { markup += html.markup } }
        mutating func appendInterpolation(_ text: String) { markup += ConsoleHTML.escape(text) }
        mutating func appendInterpolation(_ text: String?) { markup += ConsoleHTML.escape(text ?? "") }
        mutating func appendInterpolation<T: BinaryInteger>(_ number: T) { markup += String(number) }
    }

    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    /// A path segment or query value, percent-encoded for a link.
    static func component(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// A time for a person, in UTC.
    static func time(_ milliseconds: Int64?) -> String {
        guard let milliseconds else { return "—" }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate, .withTime, .withColonSeparatorInTime, .withSpaceBetweenDateAndTime]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000)) + " UTC"
    }

    /// Bytes for a person: KiB, MiB or GiB.
    static func bytes(_ count: Int64?) -> String {
        guard let count else { return "—" }
        let units = ["bytes", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count), unit = 0
        while value >= 1024, unit < units.count - 1 { (value, unit) = (value / 1024, unit + 1) }
        return unit == 0 ? "\(count) bytes" : String(format: "%.1f", value) + " " + units[unit]
    }
}

/// A submitted `application/x-www-form-urlencoded` body.
struct ConsoleForm: Sendable {
    private(set) var fields: [String: String] = [:]

    /// The largest form the console reads.
    static let maxBytes = 16 << 10

    init(_ body: String) {
        // The first value wins, so a repeated field cannot override a checked one.
        for (name, value) in Self.pairs(body) where fields[name] == nil { fields[name] = value }
    }

    /// Every `name=value` of a form or query, decoded, in order.
    static func pairs(_ body: String) -> [(name: String, value: String)] {
        body.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (decode(parts[0]), decode(parts.count > 1 ? parts[1] : ""))
        }
    }

    subscript(name: String) -> String? { fields[name] }

    private static func decode(_ part: Substring) -> String {
        String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
    }
}
