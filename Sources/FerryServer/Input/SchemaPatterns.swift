import Foundation

/// A schema's `pattern`, ready to match: in one pass over the bytes when the
/// pattern is simple (``SimplePattern``) or one the server matches by hand
/// (``DecimalPattern``), else by `NSRegularExpression` (which matches from
/// any thread). A regular expression costs far more per call: matching each
/// pushed `real` value with one was a fifth of checking a push.
///
/// ```swift
/// let pattern = try CompiledPattern("^[A-Za-z_][A-Za-z0-9_]{0,63}$")
/// pattern.matches("note")    // true
/// pattern.matches("9lives")  // false
/// ```
struct CompiledPattern: @unchecked Sendable {
    // @unchecked: NSRegularExpression is immutable and matches from any thread.
    let source: String
    private let simple: SimplePattern?
    private let decimal: DecimalPattern?
    private let expression: NSRegularExpression

    init(_ source: String) throws {
        self.source = source
        simple = SimplePattern(source)
        decimal = DecimalPattern(source)
        expression = try NSRegularExpression(pattern: source)
    }

    /// Whether the pattern matches the whole text (ICU's `$` would also
    /// match before a final line break; the document's patterns do not).
    func matches(_ text: String) -> Bool {
        if let simple { return simple.matches(text) }
        if let decimal { return decimal.matches(text) }
        let whole = NSRange(text.startIndex..., in: text)
        return expression.firstMatch(in: text, range: whole)?.range == whole
    }
}

/// The pattern of a `real` column value, `^-?(inf|(0|[1-9][0-9]*)(\.[0-9]+)?(e[+-]?[0-9]+)?)$`,
/// matched in one pass over the bytes. Taken only for that exact source: a
/// document whose pattern changes falls back to the regular expression.
struct DecimalPattern: Sendable {
    static let source = #"^-?(inf|(0|[1-9][0-9]*)(\.[0-9]+)?(e[+-]?[0-9]+)?)$"#

    init?(_ pattern: String) {
        guard pattern == Self.source else { return nil }
    }

    func matches(_ text: String) -> Bool {
        var bytes = text.utf8[...]
        if bytes.first == UInt8(ascii: "-") { bytes.removeFirst() }
        if bytes.elementsEqual("inf".utf8) { return true }
        func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        func digits() -> Int {
            let count = bytes.prefix(while: isDigit).count
            bytes.removeFirst(count)
            return count
        }
        switch bytes.first {
        case UInt8(ascii: "0")?: bytes.removeFirst()
        case let first? where isDigit(first): _ = digits()
        default: return false
        }
        if bytes.first == UInt8(ascii: ".") {
            bytes.removeFirst()
            guard digits() > 0 else { return false }
        }
        if bytes.first == UInt8(ascii: "e") {
            bytes.removeFirst()
            if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { bytes.removeFirst() }
            guard digits() > 0 else { return false }
        }
        return bytes.isEmpty
    }
}

/// An anchored pattern made only of ASCII character classes (or single
/// characters) with `{m,n}` counts, such as `^[A-Za-z_][A-Za-z0-9_]{0,63}$`,
/// matched in one pass over the bytes: most names are checked this way, a
/// regular expression costing far more per call. `nil` for any other
/// pattern, and for one where a greedy pass could be wrong (a class that
/// may repeat followed by one sharing characters with it).
struct SimplePattern: Sendable {
    struct Element: Sendable {
        var allowed: [Bool]  // by ASCII byte
        var least: Int
        var most: Int
    }

    let elements: [Element]

    init?(_ pattern: String) {
        var characters = Array(pattern)
        guard characters.first == "^", characters.last == "$" else { return nil }
        characters = Array(characters.dropFirst().dropLast())
        var elements: [Element] = []
        while !characters.isEmpty {
            var allowed = [Bool](repeating: false, count: 128)
            if characters[0] == "[" {
                guard let end = characters.firstIndex(of: "]"), end > 1 else { return nil }
                let body = Array(characters[1..<end])
                characters.removeFirst(end + 1)
                var index = 0
                while index < body.count {
                    guard let low = body[index].asciiValue, body[index] != "\\", body[index] != "^" || index > 0 else { return nil }
                    if index + 2 < body.count, body[index + 1] == "-", let high = body[index + 2].asciiValue, high >= low {
                        for byte in low...high { allowed[Int(byte)] = true }
                        index += 3
                    } else {
                        allowed[Int(low)] = true
                        index += 1
                    }
                }
            } else {
                let character = characters.removeFirst()
                guard let byte = character.asciiValue, !"\\()|*+?.{}[]^$".contains(character) else { return nil }
                allowed[Int(byte)] = true
            }
            var least = 1, most = 1
            if characters.first == "{" {
                guard let end = characters.firstIndex(of: "}") else { return nil }
                let bounds = String(characters[1..<end]).split(separator: ",", omittingEmptySubsequences: false).map { Int($0) }
                characters.removeFirst(end + 1)
                guard let first = bounds.first ?? nil, bounds.count <= 2 else { return nil }
                least = first
                most = bounds.count == 2 ? (bounds[1] ?? Int.max) : first
            } else if let next = characters.first, "*+?".contains(next) {
                return nil
            }
            elements.append(Element(allowed: allowed, least: least, most: most))
        }
        for (element, next) in zip(elements, elements.dropFirst()) where element.least != element.most {
            if (0..<128).contains(where: { element.allowed[$0] && next.allowed[$0] }) { return nil }
        }
        self.elements = elements
    }

    func matches(_ text: String) -> Bool {
        let bytes = text.utf8
        var index = bytes.startIndex
        for element in elements {
            var count = 0
            while count < element.most, index != bytes.endIndex {
                let byte = bytes[index]
                guard byte < 128, element.allowed[Int(byte)] else { break }
                count += 1
                index = bytes.index(after: index)
            }
            guard count >= element.least else { return false }
        }
        return index == bytes.endIndex
    }
}
