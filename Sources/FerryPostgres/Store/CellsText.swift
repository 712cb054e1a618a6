import FerryServer
import NIOCore
import PostgresNIO

/// A row's `cells` column, sent as `text`: its JSON written straight into
/// the statement's buffer (``StoreCoding/writeCellsJSON(_:into:)``), so a
/// push of 500 rows makes no string per row.
struct CellsText: PostgresArrayEncodable, PostgresNonThrowingEncodable {
    static var psqlType: PostgresDataType { .text }
    static var psqlArrayType: PostgresDataType { .textArray }
    static var psqlFormat: PostgresFormat { .binary }

    var cells: [String: StoredCell]

    init(_ cells: [String: StoredCell]) { self.cells = cells }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        StoreCoding.writeCellsJSON(cells, into: &buffer)
    }
}
