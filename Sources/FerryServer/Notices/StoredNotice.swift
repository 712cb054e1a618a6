import FerryProtocol

/// A conflict notice as a store keeps it: the JSON body of a row of its
/// notices table, turned into a ``ConflictNotice`` when a pull delivers it.
package struct StoredNotice: Codable, Sendable, Hashable {
    package var table: String
    package var rowID: String
    package var conflict: Conflict
    package var row: ServerRow?
    package var overriddenBy: String
    package var policy: ConflictPolicy?

    package init(_ recorded: PushPlan.RecordedNotice) {
        table = recorded.key.table
        rowID = recorded.key.rowID
        conflict = recorded.conflict
        row = recorded.row
        overriddenBy = recorded.byUserID
        policy = recorded.policy
    }

    package func notice(id: Int64, epoch: String, generation: String = "") -> ConflictNotice {
        ConflictNotice(
            id: NoticeCursor.id(id, epoch: epoch, generation: generation), table: table, rowID: rowID, conflict: conflict, row: row,
            overriddenBy: overriddenBy, policy: policy
        )
    }

    package static func decode(_ json: String) throws -> StoredNotice {
        try StoreCoding.decode(StoredNotice.self, from: json)
    }
}
