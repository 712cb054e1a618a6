import FerryProtocol

/// A push body read in one pass over its bytes, straight into a
/// ``PushRequest``: the shape every Ferry client sends, checked as it is
/// read, with no tree of values built, walked by the schema check and walked
/// again to decode.
///
/// It reads a strict subset of what the general path (``StrictJSON``, then
/// ``RequestSchemas``, then ``StrictlyDecodable``) accepts, and gives `nil`
/// for anything outside it: a string with an escape, a blob, a number with a
/// fraction, `settled`, any property it does not know, any rule broken. The
/// caller then reads the body the general way, which accepts it or says
/// where it breaks a rule. So this reader never accepts a body the general
/// path refuses, and where both accept one they give the same request
/// (`PushBodyReaderTests` checks both on generated and damaged bodies).
///
/// The limits that the server's configuration writes into its OpenAPI
/// document (mutations per push, columns per mutation) come from the
/// compiled document, as the general path's do.
///
/// ```swift
/// let reader = PushBodyReader(maxMutations: 1000, maxColumns: 256)
/// let push = reader.read(bytes) ?? (read the general way)
/// ```
struct PushBodyReader: Sendable {
    var maxMutations: Int
    var maxColumns: Int

    func read(_ bytes: [UInt8]) -> PushRequest? {
        bytes.withUnsafeBufferPointer { buffer in
            var scanner = Scanner(bytes: buffer, limits: self)
            return scanner.pushRequest()
        }
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        let limits: PushBodyReader
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>, limits: PushBodyReader) {
            self.bytes = bytes
            self.limits = limits
        }

        // MARK: - The shapes

        mutating func pushRequest() -> PushRequest? {
            skipSpace()
            guard consume(UInt8(ascii: "{")) else { return nil }
            var clientID: String?
            var mutations: [Mutation]?
            var seen: PushRequest.Seen??
            guard
                members({ scanner, key in
                    switch key {
                    case "clientID" where clientID == nil:
                        clientID = scanner.token(maxLength: 128, first: Self.isIDByte, rest: Self.isIDByte)
                        return clientID != nil
                    case "mutations" where mutations == nil:
                        mutations = scanner.mutations()
                        return mutations != nil
                    case "seen" where seen == nil:
                        seen = .some(scanner.seen())
                        return seen! != nil
                    default:
                        return false
                    }
                }),
                let clientID, let mutations
            else { return nil }
            skipSpace()
            guard index == bytes.count else { return nil }
            return PushRequest(clientID: clientID, mutations: mutations, seen: seen ?? nil)
        }

        mutating func seen() -> PushRequest.Seen? {
            guard consume(UInt8(ascii: "{")) else { return nil }
            var scope: String?
            var cursor: String?
            guard
                members({ scanner, key in
                    switch key {
                    case "scope" where scope == nil:
                        scope = scanner.token(maxLength: 200, first: Self.isScopeByte, rest: Self.isScopeByte)
                        return scope != nil
                    case "cursor" where cursor == nil:
                        cursor = scanner.plainString()
                        return cursor != nil
                    default:
                        return false
                    }
                }),
                let scope, let cursor
            else { return nil }
            return PushRequest.Seen(scope: scope, cursor: cursor)
        }

        mutating func mutations() -> [Mutation]? {
            guard consume(UInt8(ascii: "[")) else { return nil }
            var mutations: [Mutation] = []
            skipSpace()
            if consume(UInt8(ascii: "]")) { return mutations }
            while true {
                guard mutations.count < limits.maxMutations, let mutation = mutation() else { return nil }
                mutations.append(mutation)
                guard let more = separator(closing: UInt8(ascii: "]")) else { return nil }
                if !more { return mutations }
            }
        }

        mutating func mutation() -> Mutation? {
            guard consume(UInt8(ascii: "{")) else { return nil }
            var mutationID: Int64?, hlc: Int64?
            var table: String?, rowID: String?, scope: String?
            var operation: Mutation.Operation?
            var columns: [String: ColumnValue]?
            var base: Int64??
            guard
                members({ scanner, key in
                    switch key {
                    case "mutationID" where mutationID == nil:
                        mutationID = scanner.integer().flatMap { $0 >= 1 ? $0 : nil }
                        return mutationID != nil
                    case "table" where table == nil:
                        table = scanner.token(maxLength: 64, first: Self.isNameStart, rest: Self.isNameByte)
                        return table != nil
                    case "rowID" where rowID == nil:
                        rowID = scanner.token(maxLength: 128, first: Self.isPrintable, rest: Self.isPrintable)
                        return rowID != nil
                    case "scope" where scope == nil:
                        scope = scanner.token(maxLength: 200, first: Self.isScopeByte, rest: Self.isScopeByte)
                        return scope != nil
                    case "operation" where operation == nil:
                        operation = scanner.plainString().flatMap(Mutation.Operation.init(rawValue:))
                        return operation != nil
                    case "columns" where columns == nil:
                        columns = scanner.columns()
                        return columns != nil
                    case "baseVersion" where base == nil:
                        if scanner.consumeNull() {
                            base = .some(nil)
                        } else if let version = scanner.integer(), version >= 0 {
                            base = .some(version)
                        } else {
                            return false
                        }
                        return true
                    case "hlc" where hlc == nil:
                        hlc = scanner.integer().flatMap { $0 >= 0 ? $0 : nil }
                        return hlc != nil
                    default:
                        return false
                    }
                }),
                let mutationID, let table, let rowID, let scope, let operation, let columns, let hlc,
                operation == .upsert || columns.isEmpty
            else { return nil }
            return Mutation(
                mutationID: mutationID, table: table, rowID: rowID, scope: scope, operation: operation,
                columns: columns, baseVersion: base ?? nil, hlc: HLCTimestamp(rawValue: hlc))
        }

        mutating func columns() -> [String: ColumnValue]? {
            guard consume(UInt8(ascii: "{")) else { return nil }
            var columns: [String: ColumnValue] = [:]
            skipSpace()
            if consume(UInt8(ascii: "}")) { return columns }
            while true {
                skipSpace()
                guard columns.count < limits.maxColumns,
                    let name = token(maxLength: 64, first: Self.isNameStart, rest: Self.isNameByte),
                    consumeColon(), let value = columnValue(),
                    columns.updateValue(value, forKey: name) == nil,
                    let more = separator(closing: UInt8(ascii: "}"))
                else { return nil }
                if !more { return columns }
            }
        }

        /// Null, an integer, a string without escapes, or `{"real": …}`; a
        /// blob is left to the general path.
        mutating func columnValue() -> ColumnValue? {
            skipSpace()
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "n"):
                return consumeNull() ? .null : nil
            case UInt8(ascii: "\""):
                return plainString().map(ColumnValue.text)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return integer().map(ColumnValue.integer)
            case UInt8(ascii: "{"):
                index += 1
                skipSpace()
                guard plainString() == "real", consumeColon(), let text = plainString(), Self.isRealLiteral(text),
                    let real = Double(text), !real.isNaN
                else { return nil }
                skipSpace()
                guard consume(UInt8(ascii: "}")) else { return nil }
                return .real(real)
            default:
                return nil
            }
        }

        // MARK: - Objects and arrays

        /// An object's members after its `{`, each key handed to `member`
        /// with the scanner at its value; `false` from it stops the read.
        mutating func members(_ member: (inout Scanner, String) -> Bool) -> Bool {
            skipSpace()
            if consume(UInt8(ascii: "}")) { return true }
            while true {
                skipSpace()
                guard let key = plainString(), consumeColon() else { return false }
                skipSpace()
                guard member(&self, key), let more = separator(closing: UInt8(ascii: "}")) else { return false }
                if !more { return true }
            }
        }

        /// After a member or an element: `true` at a `,`, `false` at the
        /// closing byte, `nil` at anything else.
        mutating func separator(closing: UInt8) -> Bool? {
            skipSpace()
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                skipSpace()
                return true
            }
            guard bytes[index] == closing else { return nil }
            index += 1
            return false
        }

        // MARK: - Scalars

        /// A string of 1 to `maxLength` ASCII bytes that `first` and `rest`
        /// allow (the patterns the document gives ids and names), with no
        /// escape: a row id's `\` is left to the general path.
        mutating func token(maxLength: Int, first: (UInt8) -> Bool, rest: (UInt8) -> Bool) -> String? {
            skipSpace()
            guard consume(UInt8(ascii: "\"")) else { return nil }
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                let byte = bytes[index]
                guard index - start < maxLength, byte != UInt8(ascii: "\\"), index == start ? first(byte) : rest(byte) else { return nil }
                index += 1
            }
            guard index < bytes.count, index > start else { return nil }
            defer { index += 1 }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        }

        /// A string with no escape and no control byte, valid UTF-8.
        mutating func plainString() -> String? {
            skipSpace()
            guard consume(UInt8(ascii: "\"")) else { return nil }
            let start = index
            var ascii = true
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") { break }
                guard byte >= 0x20, byte != UInt8(ascii: "\\") else { return nil }
                if byte >= 0x80 { ascii = false }
                index += 1
            }
            guard index < bytes.count else { return nil }
            let run = UnsafeBufferPointer(rebasing: bytes[start..<index])
            index += 1
            return ascii ? String(decoding: run, as: UTF8.self) : String(validating: run, as: UTF8.self)
        }

        /// `-?(0|[1-9][0-9]*)` that fits in 64 bits, not followed by a
        /// fraction or an exponent.
        mutating func integer() -> Int64? {
            skipSpace()
            let negative = consume(UInt8(ascii: "-"))
            guard index < bytes.count, Self.isDigit(bytes[index]) else { return nil }
            if bytes[index] == UInt8(ascii: "0"), index + 1 < bytes.count, Self.isDigit(bytes[index + 1]) { return nil }
            // Accumulated negative, so Int64.min reads too.
            var value: Int64 = 0
            while index < bytes.count, Self.isDigit(bytes[index]) {
                let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
                let (next, underflow) = shifted.subtractingReportingOverflow(Int64(bytes[index] - UInt8(ascii: "0")))
                guard !overflow, !underflow else { return nil }
                value = next
                index += 1
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") || bytes[index] | 0x20 == UInt8(ascii: "e") { return nil }
            if negative { return value }
            return value == .min ? nil : -value
        }

        mutating func consumeNull() -> Bool {
            skipSpace()
            guard bytes.count - index >= 4, bytes[index] == UInt8(ascii: "n"), bytes[index + 1] == UInt8(ascii: "u"),
                bytes[index + 2] == UInt8(ascii: "l"), bytes[index + 3] == UInt8(ascii: "l")
            else { return false }
            index += 4
            return true
        }

        mutating func consumeColon() -> Bool {
            skipSpace()
            return consume(UInt8(ascii: ":"))
        }

        mutating func consume(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        // MARK: - Bytes the document's patterns allow

        /// `[A-Za-z0-9_-]`: a client id.
        static func isIDByte(_ byte: UInt8) -> Bool {
            isLetter(byte) || isDigit(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }

        /// `[A-Za-z0-9_.:@+-]`: a scope name.
        static func isScopeByte(_ byte: UInt8) -> Bool {
            isIDByte(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "@")
                || byte == UInt8(ascii: "+")
        }

        /// `[A-Za-z_]`, then `[A-Za-z0-9_]`: a table or column name.
        static func isNameStart(_ byte: UInt8) -> Bool { isLetter(byte) || byte == UInt8(ascii: "_") }
        static func isNameByte(_ byte: UInt8) -> Bool { isNameStart(byte) || isDigit(byte) }

        /// `[!-~]`: a row id.
        static func isPrintable(_ byte: UInt8) -> Bool { byte >= 0x21 && byte <= 0x7E }

        static func isLetter(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
        }

        static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

        /// `-?(inf|(0|[1-9][0-9]*)(\.[0-9]+)?(e[+-]?[0-9]+)?)`: how a real is written.
        static func isRealLiteral(_ text: String) -> Bool {
            var bytes = text.utf8[...]
            if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
            if bytes.elementsEqual("inf".utf8) { return true }
            func digits() -> Int {
                let count = bytes.prefix(while: isDigit).count
                bytes = bytes.dropFirst(count)
                return count
            }
            guard let first = bytes.first, isDigit(first) else { return false }
            if first == UInt8(ascii: "0") {
                bytes = bytes.dropFirst()
            } else {
                _ = digits()
            }
            if bytes.first == UInt8(ascii: ".") {
                bytes = bytes.dropFirst()
                guard digits() > 0 else { return false }
            }
            if bytes.first == UInt8(ascii: "e") {
                bytes = bytes.dropFirst()
                if bytes.first == UInt8(ascii: "+") || bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
                guard digits() > 0 else { return false }
            }
            return bytes.isEmpty
        }
    }
}
