import FerryProtocol
import Foundation
import GRDB

/// The exact mapping between SQLite values and wire values: integers stay
/// 64-bit integers, reals keep every bit, text and blobs keep every byte.
extension ColumnValue {
    /// The wire value of a database value.
    init(_ value: DatabaseValue) {
        switch value.storage {
        case .null: self = .null
        case .int64(let integer): self = .integer(integer)
        case .double(let real): self = .real(real)
        case .string(let text): self = .text(text)
        case .blob(let data): self = .blob(data)
        }
    }

    /// The database value of a wire value.
    var databaseValue: DatabaseValue {
        switch self {
        case .null: .null
        case .integer(let integer): integer.databaseValue
        case .real(let real): real.databaseValue
        case .text(let text): text.databaseValue
        case .blob(let data): data.databaseValue
        }
    }
}

/// Wire values as JSON text in Ferry's tables (conflicts, frozen payloads,
/// rows set aside), with the same exact encoding as on the wire.
enum ColumnValueJSON {
    static func encode(_ value: ColumnValue?) throws -> String? {
        guard let value else { return nil }
        return String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    }

    static func decode(_ text: String?) throws -> ColumnValue? {
        guard let text else { return nil }
        return try JSONDecoder().decode(ColumnValue.self, from: Data(text.utf8))
    }

    /// Written directly (`JSONEncoder` was a third of taking a push batch):
    /// it decodes to the same values.
    static func encodeRow(_ values: [String: ColumnValue]) -> String {
        JSONText.object(values)
    }

    static func decodeRow(_ text: String) throws -> [String: ColumnValue] {
        try JSONDecoder().decode([String: ColumnValue].self, from: Data(text.utf8))
    }
}
