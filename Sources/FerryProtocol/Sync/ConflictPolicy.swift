/// What happens to a column that two sides changed concurrently.
///
/// A column conflicts only when the server changed it after the mutation's
/// base version and holds a different value. Whatever a policy discards is
/// recorded with its base, local and server values, so no edit vanishes.
///
/// Policies are the server's, set per table (`FerryServerConfiguration`'s
/// table rules, or `ferry-server --policy task=serverWins`); clients do not
/// choose them.
///
/// ```swift
/// let tables = ServerTables(rules: ["task": TableRule(policy: .serverWins)])
/// ```
public enum ConflictPolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// The later hybrid-logical-clock stamp wins; the server refuses stamps
    /// too far ahead of its own time.
    case lastWriteWins
    /// The server's value stays; the client's value is recorded as a conflict.
    case serverWins
    /// The client's value replaces the server's; the server's value is recorded.
    case clientWins
    /// Neither value is chosen: the conflict is surfaced to the app to resolve.
    case manual
}
