@testable import Ferry
import FerryProtocol
@testable import FerryServer
import Foundation
import GRDB

/// What a simulation must show at quiescence:
///
/// - no store applied a mutation id twice or replayed another result than
///   its first, and the version counter moved once per applied mutation;
/// - every conflict the server reported to a device's current identity is
///   in that device's conflict list, and every rejection in its outbox;
/// - every acknowledged value is in the final state, or was overwritten by
///   a write that had seen it, or is recorded as a conflict (in the push
///   reply, or as a notice on one of its writer's devices);
/// - with the rejections discarded, every replica equals the server and
///   nothing is left to send.
struct SimulationCheck {
    let cluster: SimCluster
    let devices: [Simulation.Device]
    let log: [String]

    typealias Failure = Simulation.Failure

    private func fail(_ message: String) -> Failure {
        Failure(description: "\(message)\n\(log.joined(separator: "\n"))")
    }

    func run() async throws {
        let (entries, problems) = cluster.ledger.firstOutcomes()
        if let problem = problems.first { throw fail("the server broke idempotency: \(problem)") }
        // SQLite takes a version for each mutation that changes a row.
        // PostgreSQL draws one from its sequence for each fresh mutation of
        // a push, whatever its outcome, and a push that rolls back (two
        // instances racing a duplicated request) leaves its draws unused.
        // A store restored from a snapshot counts on from the snapshot's version.
        let version = try await cluster.version()
        let restore = cluster.ledger.restore
        let era = restore == nil ? 0 : 1
        let base = restore?.snapshotVersion ?? 0
        let current = entries.filter { $0.era == era }
        // (A mutation that changes nothing answers with the row's version, which may be the snapshot's.)
        let applied = Set(current.filter { $0.result.status != .rejected }.compactMap(\.result.version).filter { $0 > base }).count
        switch cluster.kind {
        case .sqlite:
            guard version == base + Int64(applied) else {
                throw fail("the version counter is \(version) but \(applied) mutations changed rows after v\(base)")
            }
        case .postgres:
            guard version >= base + Int64(current.count) else {
                throw fail("the version counter is \(version) but \(current.count) fresh mutations were applied after v\(base)")
            }
        }
        try await checkDeviceRecords(entries)
        try await checkEveryValueAccountedFor(entries)
        // What the server refused is set aside on its device until the app
        // decides: here it gives up on each, and gets the server's row back.
        for device in devices {
            for mutation in try device.database.outbox.rejectedMutations() { try device.database.outbox.discard(mutation) }
        }
        for _ in 0..<2 {
            for device in devices { _ = try await device.engine.sync() }
        }
        try await checkReplicas()
    }

    /// The conflicts and rejections the server reported to each device's
    /// current identity are on the device. (A device put back to an old
    /// copy took a new identity; what it held under the old one after the
    /// copy went with the file it replaced.)
    ///
    /// After a store restore, the devices number their mutations again from
    /// what the restored store had applied, so an id may name two mutations:
    /// one of them must hold each record.
    private func checkDeviceRecords(_ entries: [Ledger.Entry]) async throws {
        let restored = cluster.ledger.restore != nil
        for device in devices {
            let clientID = try device.database.clientID
            let conflicts = try device.database.conflicts.list()
            let rejected = try device.database.outbox.rejectedEntries()
            let mine = entries.filter { $0.clientID == clientID }
            for entry in mine {
                let id = entry.mutation.mutationID
                switch entry.result.status {
                case .rejected where restored:
                    guard
                        rejected.contains(where: { kept in
                            kept.entry.mutationID == id && kept.entry.rowID == entry.mutation.rowID
                                && entry.mutation.columns.allSatisfy { kept.values[$0.key] == $0.value }
                        })
                    else {
                        throw fail("\(device.name) lost the rejection of #\(id) (\(entry.mutation.table) \(entry.mutation.rowID))")
                    }
                case .rejected:
                    guard let kept = rejected.first(where: { $0.entry.mutationID == id }) else {
                        throw fail("\(device.name) lost the rejection of #\(id) (\(entry.mutation.table) \(entry.mutation.rowID))")
                    }
                    for (column, value) in entry.mutation.columns where kept.values[column] != value {
                        throw fail("\(device.name)'s rejection of #\(id) lost the refused value \(column) = \(value): \(kept.values)")
                    }
                case .conflict:
                    let held = conflicts.filter { $0.mutationID == id && $0.rowID == entry.mutation.rowID }
                    guard held.count == entry.result.conflicts.count || (restored && held.count > entry.result.conflicts.count) else {
                        throw fail("\(device.name) holds \(held.count) of the \(entry.result.conflicts.count) conflicts of #\(id): \(entry.result.conflicts)")
                    }
                case .applied, .merged:
                    break
                }
            }
        }
    }

    /// Every value an acknowledged mutation wrote is in the final state,
    /// or was overwritten by a later write based on it, or is recorded.
    ///
    /// Across a store restore: what the restored store holds is history
    /// again (era 1 comes after all of era 0, and its bases name versions of
    /// the snapshot). A value the restore lost was sent back by the devices:
    /// it is in the final state, or a later write of era 1 replaced it. A
    /// delete the restore lost may be undone (ARCHITECTURE.md server semantic 6).
    private func checkEveryValueAccountedFor(_ entries: [Ledger.Entry]) async throws {
        var finals: [String: ServerRow?] = [:]
        var expired = 0
        for entry in entries where entry.result.status != .rejected {
            let mutation = entry.mutation
            let key = "\(mutation.scope)/\(mutation.table)/\(mutation.rowID)"
            if finals[key] == nil {
                finals[key] = .some(try await cluster.store.row(scope: mutation.scope, table: mutation.table, rowID: mutation.rowID))
            }
            let final = finals[key]!
            let version = entry.result.version ?? 0
            let lost = cluster.ledger.lost(entry)
            if lost && mutation.operation == .delete { continue }
            let later = entries.filter {
                $0.result.status != .rejected && $0.mutation.scope == mutation.scope && $0.mutation.table == mutation.table
                    && $0.mutation.rowID == mutation.rowID
                    && ($0.era > entry.era || ($0.era == entry.era && ($0.result.version ?? 0) > version))
            }
            let columns: [String?] = mutation.operation == .delete ? [nil] : mutation.columns.keys.filter { $0 != "id" }.map { $0 }
            for column in columns {
                // A value the row already held is no change.
                if let column, let before = entry.before, !before.deleted, before.values[column] == mutation.columns[column] { continue }
                // Nor is a delete of a row already deleted.
                if column == nil, let before = entry.before, before.deleted { continue }
                // In the final state.
                if let column {
                    // (A column the row lacks reads as NULL on every device.)
                    if let final, !final.deleted, (final.values[column] ?? .null) == mutation.columns[column] { continue }
                } else if final == nil || final!.deleted {
                    continue
                }
                // Overwritten by a write that had seen it.
                let overwriters = later.filter { other in
                    other.mutation.operation == .delete || column == nil || other.mutation.columns[column!] != nil
                }
                // (A later mutation of the same client comes after it on that device.)
                if overwriters.contains(where: {
                    ($0.mutation.baseVersion ?? 0) >= version
                        || ($0.clientID == entry.clientID && ($0.era > entry.era || $0.mutation.mutationID > mutation.mutationID))
                        || (lost && $0.era > entry.era)
                }) {
                    continue
                }
                // Recorded in the push reply.
                if entry.result.conflicts.contains(where: { $0.column == column || $0.column == nil }) { continue }
                // Recorded as a notice on a device of its writer.
                let deleted = final.map(\.deleted) ?? true
                if try noticeHeld(by: entry.user, table: mutation.table, rowID: mutation.rowID, column: column, rowDeleted: deleted) { continue }
                // A notice older than the last tombstone collection may have gone with it.
                if let first = overwriters.compactMap(\.result.version).min(), first <= cluster.ledger.collectedThrough {
                    expired += 1
                    continue
                }
                let value = column.map { "\($0) = \(mutation.columns[$0]!)" } ?? "delete"
                throw fail(
                    """
                    \(entry.clientID) #\(mutation.mutationID) (\(entry.result.status) at v\(version)) \(mutation.table) \(mutation.rowID): \
                    \(value) vanished silently; final \(final.map { "\($0.deleted ? "deleted " : "")\($0.values) v\($0.version)" } ?? "absent")
                    """)
            }
        }
        if expired > 0 { print("simulation: \(expired) overwritten values whose notices tombstone collection removed") }
    }

    /// A conflict on a device of `user` names the column, or the whole
    /// row; when the row ended deleted, being told the update lost to the
    /// delete covers every value it carried.
    private func noticeHeld(by user: String, table: String, rowID: String, column: String?, rowDeleted: Bool) throws -> Bool {
        for device in devices where device.user == user {
            let conflicts = try device.database.conflicts.list()
            if conflicts.contains(where: {
                $0.table == table && $0.rowID == rowID
                    && ($0.column == column || $0.column == nil || (rowDeleted && $0.kind == .updateLostToDelete))
            }) {
                return true
            }
        }
        return false
    }

    /// Every replica equals the server; nothing is left to send.
    private func checkReplicas() async throws {
        for device in devices {
            let pending = try device.database.outbox.pendingCount()
            guard pending == 0 else { throw fail("\(device.name) still has \(pending) to send") }
            for id in Simulation.rowIDs {
                let table = id.hasPrefix("note") ? "note" : "item"
                let scope = table == "note" ? "user:\(device.user)" : "team:sim"
                let server = try await cluster.store.row(scope: scope, table: table, rowID: id)
                let columns = table == "item" ? ["name"] : device.upgraded ? ["title", "body", "priority"] : ["title", "body"]
                let expected = server.flatMap { $0.deleted ? nil : $0 }.map { row in
                    Dictionary(uniqueKeysWithValues: columns.map { ($0, row.values[$0] ?? .null) })
                }
                let local = try localRow(device, table, id).map { row in row.filter { columns.contains($0.key) } }
                guard local == expected else {
                    throw fail("\(device.name)'s \(id) differs from the server's:\n  device \(local.map { "\($0)" } ?? "absent")\n  server \(expected.map { "\($0)" } ?? "absent")")
                }
            }
        }
    }

    private func localRow(_ device: Simulation.Device, _ table: String, _ id: String) throws -> [String: ColumnValue]? {
        try device.database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM \(table) WHERE id = ?", arguments: [id]).map { row in
                var values: [String: ColumnValue] = [:]
                for column in row.columnNames where column != "id" { values[column] = ColumnValue(row[column] as DatabaseValue) }
                return values
            }
        }
    }
}
