/// How Ferry decides which scope a row of a synced table belongs to.
///
/// Every row belongs to exactly one scope. A user owns `user:<id>`; shared
/// scopes have members with read or write roles on the server.
///
/// ```swift
/// SyncedTable("note")                                   // the user's private scope
/// SyncedTable("task", scope: .column("listScope"))      // the scope named by a column
/// ```
public enum ScopeRule: Sendable, Hashable {
    /// Rows belong to the signed-in user's private scope, `user:<id>`.
    case user
    /// Rows belong to the scope whose name the given column holds.
    case column(String)
}
