import FerryServer

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
