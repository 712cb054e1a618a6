extension Substring {
    /// The text without the spaces and tabs around it: a header's optional
    /// whitespace (RFC 9110, section 5.6.3), trimmed without Foundation's
    /// character sets (every pull's `Content-Type` and `Accept-Encoding`).
    ///
    /// ```swift
    /// " gzip;q=0.5\t".split(separator: ";")[0].trimmingHeaderWhitespace   // "gzip"
    /// ```
    var trimmingHeaderWhitespace: Substring {
        func isWhitespace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = utf8.firstIndex(where: { !isWhitespace($0) }), let last = utf8.lastIndex(where: { !isWhitespace($0) }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }
}
