import FerryServer
import NIOCore
import PostgresNIO

/// A push's changed rows as the columns of one `unnest`, in the order added.
struct RowColumns {
    var scopes: [String] = []
    var tables: [String] = []
    var rowIDs: [String] = []
    var versions: [Int64] = []
    var deleted: [Bool] = []
    var clientIDs: [String] = []
    var cells: [CellsText] = []

    var isEmpty: Bool { scopes.isEmpty }

    mutating func append(_ key: RowKey, _ row: StoredRow) {
        scopes.append(key.scope)
        tables.append(key.table)
        rowIDs.append(key.rowID)
        versions.append(row.version)
        deleted.append(row.deleted)
        clientIDs.append(row.clientID)
        cells.append(CellsText(row.cells))
    }
}

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
