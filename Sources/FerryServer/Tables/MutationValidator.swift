import FerryProtocol

/// A mutation about to be applied, as a ``MutationValidator`` sees it.
public struct ProposedMutation: Sendable {
    /// The authenticated user who pushed it.
    public var userID: String
    public var clientID: String
    public var mutation: Mutation
    /// The row's current values on the server, or `nil` when it does not exist
    /// or is deleted.
    public var currentValues: [String: ColumnValue]?
}

/// What a validator decides.
public enum ValidationVerdict: Sendable, Hashable {
    case accept
    /// Refuse the mutation. The client's last applied id still advances, the
    /// rejection is recorded, and the reason goes back to the client.
    case reject(reason: String)
}

/// An app's server-side rule for one table.
///
/// A store may ask it more than once about one mutation: when it retries a
/// transaction, and when it first plans a push of new rows as if none were
/// stored (``ProposedMutation/currentValues`` `nil`) and then plans it again
/// with the rows it found. Only the last answer counts, so it decides from
/// what it is given and has no effects of its own.
///
/// ```swift
/// let titleRequired = MutationValidator { proposed in
///     if case .text(let title)? = proposed.mutation.columns["title"], title.isEmpty {
///         return .reject(reason: "a note needs a title")
///     }
///     return .accept
/// }
/// let tables = ServerTables(rules: ["note": TableRule(policy: .lastWriteWins, validator: titleRequired)])
/// ```
public struct MutationValidator: Sendable {
    let validate: @Sendable (ProposedMutation) -> ValidationVerdict

    public init(_ validate: @escaping @Sendable (ProposedMutation) -> ValidationVerdict) {
        self.validate = validate
    }
}
