import FerryProtocol
import GRDB

extension FerryDatabase {
    /// Applies a pulled page exactly as ``SyncEngine`` does, returning the
    /// rows written. For `ferry-bench`, which measures the apply path
    /// without a server.
    ///
    /// ```swift
    /// @_spi(Benchmarks) import Ferry
    /// let written = try database.applyPulledPage(page, userID: "bench")
    /// ```
    @_spi(Benchmarks) public func applyPulledPage(_ page: PullPage, userID: String) throws -> Int {
        try PageApplier(database: self, userScope: "user:\(userID)").apply(page).written
    }

    /// Runs `updates` with change capture off, as pulled pages are applied:
    /// for seeding benchmark databases with rows that came from a server.
    @_spi(Benchmarks) public func writeAsServer<T>(_ updates: (Database) throws -> T) throws -> T {
        try writeWithoutCapture(updates)
    }
}
