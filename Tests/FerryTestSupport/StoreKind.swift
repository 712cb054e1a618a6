import Testing

/// The server stores a suite runs against.
public enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    /// SQLite always; PostgreSQL when a cluster is configured, and always in
    /// CI, where a missing cluster fails the test instead of skipping it.
    public static var available: [StoreKind] {
        PostgresTestDatabase.shouldRun ? [.sqlite, .postgres] : [.sqlite]
    }

    public var testDescription: String { rawValue }
}
