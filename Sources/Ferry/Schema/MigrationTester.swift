import Foundation
import GRDB

/// Checks that database files saved by older app versions upgrade to exactly
/// the schema of a fresh install, then hands the upgraded database to the
/// test for data assertions.
///
/// Keep a database file made by every shipped version (with awkward data in
/// it) next to your tests, and upgrade each one:
///
/// ```swift
/// let tester = MigrationTester(schema: schema)
/// try tester.upgrade(fixture: fixturesURL.appending(path: "v1.sqlite")) { database in
///     let titles = try database.read { db in try String.fetchAll(db, sql: "SELECT title FROM note") }
///     #expect(titles.contains("naïve café"))
/// }
/// ```
///
/// The fixture file itself is never modified: it is copied to a temporary
/// directory first.
public struct MigrationTester: Sendable {
    /// The schema to upgrade to: its migrations, synced tables and target version.
    public var schema: FerrySchema
    /// The configuration both databases open with.
    public var configuration: FerryConfiguration
    /// Where the committed snapshot files live (`<version>.schema.txt`).
    /// When set, a fresh install must also match the committed file of its
    /// version, which catches an edited shipped migration.
    public var snapshotsDirectory: URL?

    public init(schema: FerrySchema, snapshotsDirectory: URL? = nil, configuration: FerryConfiguration = FerryConfiguration()) {
        self.schema = schema
        self.snapshotsDirectory = snapshotsDirectory
        self.configuration = configuration
    }

    /// The schema of a fresh install of ``schema``.
    public func freshInstallSnapshot(includingFerryObjects: Bool = true) throws -> SchemaSnapshot {
        try Self.withTemporaryDirectory { directory in
            let database = try FerryDatabase(
                path: directory.appendingPathComponent("fresh.sqlite").path,
                schema: schema, configuration: configuration)
            return try database.read { db in try SchemaSnapshot(db, includingFerryObjects: includingFerryObjects) }
        }
    }

    /// Checks a fresh install against the committed snapshot file of its version.
    public func checkCommittedSnapshot() throws {
        guard let snapshotsDirectory else { return }
        let version = schema.version ?? "none"
        let file = snapshotsDirectory.appendingPathComponent("\(version).schema.txt")
        guard let text = try? String(contentsOf: file, encoding: .utf8) else {
            throw FerryError(.schemaMismatch, "no committed snapshot for schema version `\(version)` at \(file.path); export one when the version ships")
        }
        let difference = try freshInstallSnapshot(includingFerryObjects: false).difference(from: SchemaSnapshot(text: text))
        guard difference.isEmpty else {
            throw FerryError(
                .schemaMismatch,
                """
                a fresh install of `\(version)` differs from its committed snapshot \(file.lastPathComponent) \
                (- fresh install, + committed); a shipped migration was changed:
                \(difference.joined(separator: "\n"))
                """)
        }
    }

    /// Upgrades a copy of `fixture`, checks its schema equals a fresh
    /// install's, and runs `check` on the upgraded database.
    ///
    /// - throws: ``FerryError`` with code `schemaMismatch` listing the
    ///   differing lines, or whatever `check` or a migration throws.
    @discardableResult
    public func upgrade<T>(fixture: URL, check: (FerryDatabase) throws -> T) throws -> T {
        try checkCommittedSnapshot()
        let expected = try freshInstallSnapshot()
        return try Self.withTemporaryDirectory { directory in
            let copy = directory.appendingPathComponent(fixture.lastPathComponent)
            try FileManager.default.copyItem(at: fixture, to: copy)
            for suffix in ["-wal", "-shm"] {
                let sidecar = URL(fileURLWithPath: fixture.path + suffix)
                if FileManager.default.fileExists(atPath: sidecar.path) {
                    try FileManager.default.copyItem(at: sidecar, to: URL(fileURLWithPath: copy.path + suffix))
                }
            }
            let database = try FerryDatabase(path: copy.path, schema: schema, configuration: configuration)
            let migrated = try database.read { db in try SchemaSnapshot(db, includingFerryObjects: true) }
            let difference = migrated.difference(from: expected)
            guard difference.isEmpty else {
                throw FerryError(
                    .schemaMismatch,
                    """
                    \(fixture.lastPathComponent) upgraded to \(schema.version ?? "no version") differs from a fresh install \
                    (- upgraded, + fresh):
                    \(difference.joined(separator: "\n"))
                    """)
            }
            let integrity = try database.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
            guard integrity == ["ok"] else {
                throw FerryError(.schemaMismatch, "\(fixture.lastPathComponent) fails integrity_check after upgrade: \(integrity)")
            }
            let violations = try database.read { db in try Row.fetchAll(db, sql: "PRAGMA foreign_key_check") }
            guard violations.isEmpty else {
                throw FerryError(
                    .schemaMismatch,
                    "\(fixture.lastPathComponent) has \(violations.count) foreign key violations after upgrade, first: \(violations[0])")
            }
            return try check(database)
        }
    }

    static func withTemporaryDirectory<T>(_ body: (URL) throws -> T) throws -> T {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("ferry-migration-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        return try body(directory)
    }
}
