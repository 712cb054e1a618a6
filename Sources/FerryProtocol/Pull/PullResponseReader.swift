import Foundation

/// Reads a pull's answer (``PullResponse``) or a live page (``PullPage``)
/// straight from its JSON bytes, in one pass, without `JSONDecoder` (which
/// took more of a first sync than applying the rows did); and a push's
/// answer (``PushResponse``) whose results carry no conflicts or rows, as
/// every result of a long drain does.
///
/// It reads what `JSONDecoder` reads from every answer a Ferry server
/// writes (checked against it), and skips keys it does not know. It is
/// strict where `JSONDecoder` would have to judge: anything unusual (a
/// number with a fraction where an integer goes, a bare number as a real, a
/// key given twice, invalid UTF-8, malformed JSON) throws, and ``decode(_:from:)`` then hands the body
/// to `JSONDecoder`, which accepts it or says precisely why not. Notices,
/// rare and nested, are read by `JSONDecoder` from their own bytes.
///
/// ```swift
/// let response = try PullResponseReader.decode(PullResponse.self, from: body)   // any Decodable; pulls fast
/// ```
public enum PullResponseReader {
    /// `T` from `data`: a ``PullResponse``, ``PullPage`` or ``PushResponse`` by the reader,
    /// falling back to `JSONDecoder` when the reader declines; anything
    /// else by `JSONDecoder`.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        if T.self == PullResponse.self, let response = try? response(data) { return response as! T }
        if T.self == PullPage.self, let page = try? page(data) { return page as! T }
        if T.self == PushResponse.self, let response = try? pushResponse(data) { return response as! T }
        return try JSONDecoder().decode(T.self, from: data)
    }

    /// A pull's answer, read by the reader alone.
    public static func response(_ data: Data) throws -> PullResponse {
        try read(data) { try $0.pullResponse() }
    }

    /// A push's answer, read by the reader alone: it declines a result with
    /// conflicts or a row.
    public static func pushResponse(_ data: Data) throws -> PushResponse {
        try read(data) { try $0.pushResponse() }
    }

    /// A live page, read by the reader alone.
    public static func page(_ data: Data) throws -> PullPage {
        try read(data) { try $0.pullPage() }
    }

    /// The value `shape` reads from the whole of `data` (nothing may follow it).
    private static func read<T>(_ data: Data, _ shape: (inout JSONScanner) throws -> T) throws -> T {
        try data.withUnsafeBytes { bytes in
            var scanner = JSONScanner(bytes)
            let value = try shape(&scanner)
            try scanner.end()
            return value
        }
    }
}

/// Why ``PullResponseReader`` declined a body.
struct JSONScanError: Error, CustomStringConvertible {
    var description: String
    var offset: Int
}

/// A cursor over JSON bytes, reading the shapes a pull answer has.
struct JSONScanner {
    private let bytes: UnsafeRawBufferPointer
    private var index = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    // MARK: The pull's shapes

    mutating func pullResponse() throws -> PullResponse {
        var lastApplied: Int64?
        var pages: [PullPage]?
        var seen = Set<String>()
        if try beginObject() {
            repeat {
                switch try key(once: &seen) {
                case "lastAppliedMutationID": lastApplied = try int64()
                case "pages":
                    var read: [PullPage] = []
                    if try beginArray() {
                        repeat { read.append(try pullPage()) } while try nextElement()
                    }
                    pages = read
                default: try skipValue()
                }
            } while try nextMember()
        }
        guard let lastApplied, let pages else { throw failure("a pull answer without lastAppliedMutationID or pages") }
        return PullResponse(lastAppliedMutationID: lastApplied, pages: pages)
    }

    mutating func pullPage() throws -> PullPage {
        var scope: String?, cursor: String?, hasMore: Bool?, reset: Bool?
        var changes: [RowChange]?
        var page = PullPage(scope: "", changes: [], cursor: "", hasMore: false, reset: false)
        var seen = Set<String>()
        if try beginObject() {
            repeat {
                switch try key(once: &seen) {
                case "scope": scope = try string()
                case "cursor": cursor = try string()
                case "hasMore": hasMore = try bool()
                case "reset": reset = try bool()
                case "changes":
                    var rows: [RowChange] = []
                    if try beginArray() {
                        repeat { rows.append(try rowChange()) } while try nextElement()
                    }
                    changes = rows
                case "lostHistory": page.lostHistory = try nullable { try $0.bool() } ?? false
                case "noticeCursor": page.noticeCursor = try nullable { try $0.string() }
                case "after": page.after = try nullable { try $0.string() }
                case "estimatedRows": page.estimatedRows = try nullable { Int(try $0.int64()) }
                case "settledNotices":
                    page.settledNotices =
                        try nullable { scanner in
                            var ids: [String] = []
                            if try scanner.beginArray() {
                                repeat { ids.append(try scanner.string()) } while try scanner.nextElement()
                            }
                            return ids
                        } ?? []
                case "notices":
                    page.notices = try notices()
                default: try skipValue()
                }
            } while try nextMember()
        }
        guard let scope, let cursor, let hasMore, let reset, let changes else {
            throw failure("a page without scope, changes, cursor, hasMore or reset")
        }
        page.scope = scope
        page.cursor = cursor
        page.hasMore = hasMore
        page.reset = reset
        page.changes = changes
        return page
    }

    /// A page's notices: none, or read by `JSONDecoder` from their own bytes.
    mutating func notices() throws -> [ConflictNotice] {
        let start = try valueStart()
        if try nullable({ try !$0.beginArray() }) ?? true { return [] }
        index = start
        try skipValue()
        return try JSONDecoder().decode([ConflictNotice].self, from: Data(UnsafeRawBufferPointer(rebasing: bytes[start..<index])))
    }

    mutating func rowChange() throws -> RowChange {
        var table: String?, rowID: String?, version: Int64?, deleted: Bool?
        var values: [String: ColumnValue]?
        var hlc: HLCTimestamp?
        // The keys read so far, one bit each: a row is the hot path, so no set per row.
        var seen: UInt8 = 0
        func once(_ bit: UInt8) throws {
            guard seen & bit == 0 else { throw failure("a key given twice") }
            seen |= bit
        }
        if try beginObject() {
            repeat {
                switch try key() {
                case "table":
                    try once(1)
                    table = try string()
                case "rowID":
                    try once(2)
                    rowID = try string()
                case "version":
                    try once(4)
                    version = try int64()
                case "deleted":
                    try once(8)
                    deleted = try bool()
                case "hlc":
                    try once(16)
                    hlc = try nullable { HLCTimestamp(rawValue: try $0.int64()) }
                case "values":
                    try once(32)
                    var read: [String: ColumnValue] = [:]
                    if try beginObject() {
                        repeat {
                            let column = try key()
                            // `JSONDecoder` keeps the first of a key given twice: decline, and let it.
                            guard read.updateValue(try columnValue(), forKey: column) == nil else {
                                throw failure("a column given twice")
                            }
                        } while try nextMember()
                    }
                    values = read
                default: try skipValue()
                }
            } while try nextMember()
        }
        guard let table, let rowID, let version, let deleted, let values else {
            throw failure("a row without table, rowID, version, deleted or values")
        }
        return RowChange(table: table, rowID: rowID, version: version, deleted: deleted, values: values, hlc: hlc)
    }

    /// `null`, a string, an integer, `{"real": …}` or `{"blob": …}`, as ``ColumnValue`` reads them.
    mutating func columnValue() throws -> ColumnValue {
        switch try peek() {
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "\""):
            return .text(try string())
        case UInt8(ascii: "{"):
            guard try beginObject() else { throw failure("an empty tagged value") }
            let value: ColumnValue
            switch try key() {
            case "real":
                if try peek() == UInt8(ascii: "\"") {
                    guard let real = Double(try string()), !real.isNaN else { throw failure("not a real number") }
                    value = .real(real)
                } else {
                    // Ferry writes reals as strings; a bare number's range rules are `JSONDecoder`'s to apply.
                    throw failure("a bare number as a real")
                }
            case "blob":
                guard let data = Data(base64Encoded: try string()) else { throw failure("blob is not valid base64") }
                value = .blob(data)
            default:
                throw failure("a tagged value is real or blob")
            }
            guard try !nextMember() else { throw failure("a tagged value has one key") }
            return value
        default:
            return .integer(try int64())
        }
    }

    // MARK: JSON

    /// Checks that nothing but whitespace follows.
    mutating func end() throws {
        skipSpace()
        guard index == bytes.count else { throw failure("bytes after the value") }
    }

    /// Reads `{`; `false` if `}` follows at once.
    mutating func beginObject() throws -> Bool {
        try expect(UInt8(ascii: "{"))
        if try peek() == UInt8(ascii: "}") {
            index += 1
            return false
        }
        return true
    }

    /// Reads a member's key and its colon, declining a key read before in
    /// the same object (`JSONDecoder` keeps the first; this reader would keep the last).
    mutating func key(once seen: inout Set<String>) throws -> String {
        let key = try key()
        guard seen.insert(key).inserted else { throw failure("the key \(key) given twice") }
        return key
    }

    /// Reads a member's key and its colon.
    mutating func key() throws -> String {
        let key = try string()
        try expect(UInt8(ascii: ":"))
        return key
    }

    /// Reads `,` (`true`: another member follows) or `}` (`false`).
    mutating func nextMember() throws -> Bool {
        try separator(closing: UInt8(ascii: "}"))
    }

    /// Reads `[`; `false` if `]` follows at once.
    mutating func beginArray() throws -> Bool {
        try expect(UInt8(ascii: "["))
        if try peek() == UInt8(ascii: "]") {
            index += 1
            return false
        }
        return true
    }

    /// Reads `,` (`true`: another element follows) or `]` (`false`).
    mutating func nextElement() throws -> Bool {
        try separator(closing: UInt8(ascii: "]"))
    }

    /// `nil` for `null`, else what `read` reads.
    mutating func nullable<T>(_ read: (inout JSONScanner) throws -> T) throws -> T? {
        if try peek() == UInt8(ascii: "n") {
            try literal("null")
            return nil
        }
        return try read(&self)
    }

    mutating func bool() throws -> Bool {
        switch try peek() {
        case UInt8(ascii: "t"):
            try literal("true")
            return true
        case UInt8(ascii: "f"):
            try literal("false")
            return false
        default: throw failure("expected true or false")
        }
    }

    /// An integer literal within 64 bits; a fraction or exponent declines.
    mutating func int64() throws -> Int64 {
        skipSpace()
        let negative = index < bytes.count && bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let start = index
        var magnitude: UInt64 = 0
        while index < bytes.count {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            let (times, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(UInt64(digit))
            guard !overflow, !carry else { throw failure("an integer past 64 bits") }
            magnitude = sum
            index += 1
        }
        let digits = index - start
        guard digits > 0, digits == 1 || bytes[start] != UInt8(ascii: "0") else { throw failure("not an integer") }
        if index < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[index]) {
            throw failure("a number with a fraction or exponent where an integer goes")
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { throw failure("an integer past 64 bits") }
            return magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { throw failure("an integer past 64 bits") }
        return Int64(magnitude)
    }

    /// A number literal's text, checked against JSON's grammar.
    mutating func numberText() throws -> String {
        skipSpace()
        let start = index
        func digits(_ scanner: inout JSONScanner) -> Int {
            let from = scanner.index
            while scanner.index < scanner.bytes.count, scanner.bytes[scanner.index] &- UInt8(ascii: "0") < 10 { scanner.index += 1 }
            return scanner.index - from
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        let integral = index
        guard digits(&self) > 0, index - integral == 1 || bytes[integral] != UInt8(ascii: "0") else { throw failure("not a number") }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits(&self) > 0 else { throw failure("not a number") }
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits(&self) > 0 else { throw failure("not a number") }
        }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    }

    /// A string, its escapes resolved.
    mutating func string() throws -> String {
        try expect(UInt8(ascii: "\""))
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
                index += 1
                guard let string = String(validating: text, as: UTF8.self) else { throw failure("a string that is not UTF-8") }
                return string
            }
            if byte == UInt8(ascii: "\\") { return try escapedString(from: start) }
            guard byte >= 0x20 else { throw failure("a control character in a string") }
            index += 1
        }
        throw failure("an unterminated string")
    }

    private mutating func escapedString(from start: Int) throws -> String {
        var out = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let string = String(validating: out, as: UTF8.self) else { throw failure("a string that is not UTF-8") }
                return string
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { throw failure("an unterminated string") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw failure("a lone surrogate")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw failure("a lone surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw failure("a lone surrogate") }
                    out.append(contentsOf: Array(String(Character(unicode)).utf8))
                default: throw failure("an unknown escape")
                }
            default:
                guard byte >= 0x20 else { throw failure("a control character in a string") }
                out.append(byte)
            }
        }
        throw failure("an unterminated string")
    }

    private mutating func hex4() throws -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("a short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("a bad \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// Skips one value of any shape, checking its grammar.
    mutating func skipValue(depth: Int = 0) throws {
        guard depth < 64 else { throw failure("nested too deep") }
        switch try peek() {
        case UInt8(ascii: "{"):
            if try beginObject() {
                repeat {
                    _ = try key()
                    try skipValue(depth: depth + 1)
                } while try nextMember()
            }
        case UInt8(ascii: "["):
            if try beginArray() {
                repeat { try skipValue(depth: depth + 1) } while try nextElement()
            }
        case UInt8(ascii: "\""): _ = try string()
        case UInt8(ascii: "t"), UInt8(ascii: "f"): _ = try bool()
        case UInt8(ascii: "n"): try literal("null")
        default: _ = try numberText()
        }
    }

    /// Where the next value starts, after whitespace.
    mutating func valueStart() throws -> Int {
        _ = try peek()
        return index
    }

    private mutating func separator(closing: UInt8) throws -> Bool {
        switch try peek() {
        case UInt8(ascii: ","):
            index += 1
            return true
        case closing:
            index += 1
            return false
        default: throw failure("expected , or \(Character(Unicode.Scalar(closing)))")
        }
    }

    private mutating func literal(_ word: StaticString) throws {
        skipSpace()
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count,
            UnsafeRawBufferPointer(rebasing: bytes[index..<index + count]).elementsEqual(
                UnsafeBufferPointer(start: word.utf8Start, count: count))
        else { throw failure("expected \(word)") }
        index += count
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard try peek() == byte else { throw failure("expected \(Character(Unicode.Scalar(byte)))") }
        index += 1
    }

    /// The next byte after whitespace, not consumed.
    private mutating func peek() throws -> UInt8 {
        skipSpace()
        guard index < bytes.count else { throw failure("the body ends early") }
        return bytes[index]
    }

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    func failure(_ description: String) -> JSONScanError {
        JSONScanError(description: description, offset: index)
    }
}
