import Foundation

/// One SQLite value, carried exactly over the wire.
///
/// Every value SQLite can store round-trips through JSON without loss:
/// NULL, every 64-bit integer (`Int64.min` and `Int64.max` included), every
/// real (`-0.0`, subnormals, infinities), any Unicode text and any blob.
///
/// The JSON form stays readable: NULL is `null`, integers are numbers, text
/// is a string. Reals and blobs are tagged so they can never be mistaken for
/// an integer or a string: `{"real": "0.1"}` (the shortest decimal that
/// reads back to the same `Double`) and `{"blob": "<base64>"}`.
///
/// ```swift
/// let values: [String: ColumnValue] = ["title": "Milk", "count": 2, "ratio": .real(0.5), "due": .null]
/// let json = try JSONEncoder().encode(values)
/// // {"count":2,"due":null,"ratio":{"real":"0.5"},"title":"Milk"}
/// assert(try JSONDecoder().decode([String: ColumnValue].self, from: json) == values)
/// ```
///
/// Equality is exact: `.real(-0.0)` differs from `.real(0.0)`, and
/// `.integer(1)` differs from `.real(1)`, because SQLite keeps them apart.
public enum ColumnValue: Sendable, Hashable, Codable, CustomStringConvertible {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    public static func == (lhs: ColumnValue, rhs: ColumnValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.integer(a), .integer(b)): a == b
        case let (.real(a), .real(b)): a.bitPattern == b.bitPattern
        case let (.text(a), .text(b)): a.unicodeScalars.elementsEqual(b.unicodeScalars)
        case let (.blob(a), .blob(b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .integer(let value): hasher.combine(1); hasher.combine(value)
        case .real(let value): hasher.combine(2); hasher.combine(value.bitPattern)
        case .text(let value):
            // Scalars, not characters: SQLite compares bytes, not canonical equivalence.
            hasher.combine(3)
            for scalar in value.unicodeScalars { hasher.combine(scalar.value) }
        case .blob(let value): hasher.combine(4); hasher.combine(value)
        }
    }

    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .text(let value): String(reflecting: value)
        case .blob(let value): "blob(\(value.count) bytes)"
        }
    }

    private enum TagKey: String, CodingKey {
        case real, blob
    }

    public init(from decoder: any Decoder) throws {
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
            return
        }
        if let text = try? single.decode(String.self) {
            self = .text(text)
            return
        }
        if let integer = try? single.decode(Int64.self) {
            // Decoders round `1.0000000000000001` to 1: only an exactly integral number is an integer.
            if let decimal = try? single.decode(Decimal.self), decimal != Decimal(integer) {
                throw DecodingError.dataCorruptedError(
                    in: single,
                    debugDescription: "a bare number must be a 64-bit integer; write reals as {\"real\": \"1.5\"}"
                )
            }
            self = .integer(integer)
            return
        }
        if (try? single.decode(Double.self)) != nil {
            throw DecodingError.dataCorruptedError(
                in: single,
                debugDescription: "a bare number must be a 64-bit integer; write reals as {\"real\": \"1.5\"}"
            )
        }
        let tagged: KeyedDecodingContainer<TagKey>
        do {
            tagged = try decoder.container(keyedBy: TagKey.self)
        } catch {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "expected null, an integer, a string, {\"real\": …} or {\"blob\": …}"
                ))
        }
        guard tagged.allKeys.count == 1, let key = tagged.allKeys.first else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "a tagged value has exactly one key, \"real\" or \"blob\""
                ))
        }
        switch key {
        case .real:
            if let text = try? tagged.decode(String.self, forKey: .real) {
                guard let value = Double(text), !value.isNaN else {
                    throw DecodingError.dataCorruptedError(
                        forKey: .real, in: tagged, debugDescription: "\(String(reflecting: text)) is not a real number"
                    )
                }
                self = .real(value)
            } else {
                self = .real(try tagged.decode(Double.self, forKey: .real))
            }
        case .blob:
            let base64 = try tagged.decode(String.self, forKey: .blob)
            guard let data = Data(base64Encoded: base64) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .blob, in: tagged, debugDescription: "blob is not valid base64"
                )
            }
            self = .blob(data)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .integer(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        case .text(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        case .real(let value):
            var tagged = encoder.container(keyedBy: TagKey.self)
            // `description` is the shortest decimal that parses back to the same bits.
            try tagged.encode(String(value), forKey: .real)
        case .blob(let value):
            var tagged = encoder.container(keyedBy: TagKey.self)
            try tagged.encode(value.base64EncodedString(), forKey: .blob)
        }
    }
}

// Deliberately not ExpressibleByNilLiteral: `nil` must stay "absent" in a
// `ColumnValue?`, never silently become SQL NULL.
extension ColumnValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral {
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(stringLiteral value: String) { self = .text(value) }
}
