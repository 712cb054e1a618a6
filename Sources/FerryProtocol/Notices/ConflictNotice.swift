/// Tells a writer that a value of theirs, which the server had applied, was
/// later discarded by another writer's edit or delete made without having
/// seen it: no edit vanishes silently.
///
/// Notices reach every device of the writer's user, in the pull page of the
/// row's scope; each device receives each notice once (its notice cursor
/// moves past it). The conflict is told from the receiver's side: `local`
/// is the value they wrote and lost, `server` what stands now (`nil` when
/// the row was deleted), `resolution` is `keptServer`.
///
/// ```swift
/// for notice in page.notices {
///     print("\(notice.overriddenBy) replaced your \(notice.conflict.column ?? "row") on \(notice.table) \(notice.rowID)")
/// }
/// ```
public struct ConflictNotice: Sendable, Hashable, Codable {
    /// Unique in the store; a client may use it to drop a notice it already holds.
    public var id: String
    public var table: String
    public var rowID: String
    /// What was lost and what stands, from the receiver's side.
    public var conflict: Conflict
    /// The row after the write that overrode the value.
    public var row: ServerRow?
    /// The user whose write or delete overrode the value.
    public var overriddenBy: String
    /// The table's policy that chose the other value; `nil` when a delete won.
    public var policy: ConflictPolicy?

    public init(
        id: String, table: String, rowID: String, conflict: Conflict, row: ServerRow?,
        overriddenBy: String, policy: ConflictPolicy?
    ) {
        self.id = id
        self.table = table
        self.rowID = rowID
        self.conflict = conflict
        self.row = row
        self.overriddenBy = overriddenBy
        self.policy = policy
    }
}
