import FerryProtocol

/// How the server treats one synced table.
public struct TableRule: Sendable {
    public var policy: ConflictPolicy
    public var validator: MutationValidator?

    public init(policy: ConflictPolicy = .lastWriteWins, validator: MutationValidator? = nil) {
        self.policy = policy
        self.validator = validator
    }
}

/// The tables a server accepts and the rule for each.
///
/// By default any well-formed table name is accepted with last-write-wins;
/// set `acceptsOtherTables` to `false` to refuse tables not listed.
///
/// ```swift
/// var tables = ServerTables()
/// tables.rules["invoice"] = TableRule(policy: .manual)
/// ```
public struct ServerTables: Sendable {
    public var rules: [String: TableRule]
    public var defaultRule: TableRule
    public var acceptsOtherTables: Bool

    public init(rules: [String: TableRule] = [:], defaultRule: TableRule = TableRule(), acceptsOtherTables: Bool = true) {
        self.rules = rules
        self.defaultRule = defaultRule
        self.acceptsOtherTables = acceptsOtherTables
    }

    /// The rule for `table`, or `nil` when the server refuses it.
    public func rule(for table: String) -> TableRule? {
        if let rule = rules[table] { return rule }
        return acceptsOtherTables ? defaultRule : nil
    }
}
