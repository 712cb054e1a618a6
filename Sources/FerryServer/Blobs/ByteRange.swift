/// An HTTP `Range` header for one blob, read as a pure rule (RFC 9110,
/// single byte ranges only).
///
/// ```swift
/// try ByteRange.parse("bytes=100-", size: 1000)     // 100..<1000
/// try ByteRange.parse("bytes=-10", size: 1000)      // 990..<1000 (the last 10)
/// try ByteRange.parse("bytes=2000-", size: 1000)    // throws rangeNotSatisfiable
/// ```
enum ByteRange {
    /// The bytes a `Range` header asks for, or `nil` for the whole blob (no
    /// header, or a form this server does not serve partially: several ranges,
    /// another unit), which RFC 9110 allows to answer with 200 and all of it.
    static func parse(_ header: String?, size: Int64) throws(FerryServerError) -> Range<Int64>? {
        guard let header, header.hasPrefix("bytes=") else { return nil }
        let spec = header.dropFirst("bytes=".count).trimmingCharacters(in: " ")
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash], last = spec[spec.index(after: dash)...]
        if first.isEmpty {
            // A suffix: the last N bytes.
            guard let count = Int64(last), count > 0 else { throw unsatisfiable(header, size) }
            return max(0, size - count)..<size
        }
        guard let start = Int64(first), start >= 0 else { return nil }
        guard start < size else { throw unsatisfiable(header, size) }
        if last.isEmpty { return start..<size }
        guard let end = Int64(last), end >= start else { return nil }
        return start..<min(end + 1, size)
    }

    private static func unsatisfiable(_ header: String, _ size: Int64) -> FerryServerError {
        FerryServerError(.rangeNotSatisfiable, "`Range: \(header)` asks for no byte of a \(size)-byte blob")
    }
}

private extension Substring {
    func trimmingCharacters(in character: Character) -> Substring {
        var text = self
        while text.first == character { text = text.dropFirst() }
        while text.last == character { text = text.dropLast() }
        return text
    }
}
