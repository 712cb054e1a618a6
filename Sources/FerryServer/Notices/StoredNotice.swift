import FerryProtocol

/// A conflict notice as a store keeps it: the JSON body of a row of its
/// notices table, turned into a ``ConflictNotice`` when a pull delivers it.
struct StoredNotice: Codable, Sendable, Hashable {
    var table: String
    var rowID: String
    var conflict: Conflict
    var row: ServerRow?
    var overriddenBy: String
    var policy: ConflictPolicy?

    init(_ recorded: PushPlan.RecordedNotice) {
        table = recorded.key.table
        rowID = recorded.key.rowID
        conflict = recorded.conflict
        row = recorded.row
        overriddenBy = recorded.byUserID
        policy = recorded.policy
    }

    func notice(id: Int64, epoch: String, generation: String = "") -> ConflictNotice {
        ConflictNotice(
            id: NoticeCursor.id(id, epoch: epoch, generation: generation), table: table, rowID: rowID, conflict: conflict, row: row,
            overriddenBy: overriddenBy, policy: policy
        )
    }

    static func decode(_ json: String) throws -> StoredNotice {
        try StoreCoding.decode(StoredNotice.self, from: json)
    }
}
