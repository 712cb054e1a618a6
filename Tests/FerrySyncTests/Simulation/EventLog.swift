@_spi(Benchmarks) import Ferry
import FerryProtocol
import Foundation
import GRDB

/// A run's complete event log, as text two runs of one seed can compare
/// byte for byte: every step and what it answered, then the end state of
/// every device (rows, conflicts, outbox entries, known versions and
/// stamps) and of the server (each row's version, deletion and values).
///
/// Names that are random by design are numbered in order of first
/// appearance: client ids and store epochs (UUIDs), and the ports servers
/// listen on. Nothing else is rewritten, so any other difference between two
/// runs — a value, a version, a conflict, an outcome — shows.
enum EventLog {
    static func make(steps: [String], devices: [Simulation.Device], cluster: SimCluster) async throws -> String {
        var lines = steps
        for device in devices {
            lines.append("device \(device.name) (\(device.user))\(device.upgraded ? ", upgraded" : "")")
            lines += try await device.database.read { db in
                var state: [String] = []
                for table in ["note", "item"] {
                    for row in try Row.fetchAll(db, sql: "SELECT * FROM \(table) ORDER BY id") {
                        state.append("  \(table) \(row)")
                    }
                }
                for row in try Row.fetchAll(
                    db,
                    sql: """
                        SELECT tbl, row_id, scope, kind, column_name, base, local, server, resolution, mutation_id, server_version,
                               overridden_by, notice_id IS NOT NULL AS noticed
                        FROM ferry_conflicts ORDER BY id
                        """)
                {
                    state.append("  conflict \(row)")
                }
                for row in try Row.fetchAll(db, sql: "SELECT tbl, row_id, op, state, base_version, refused_values FROM ferry_outbox ORDER BY seq") {
                    state.append("  outbox \(row)")
                }
                for row in try Row.fetchAll(db, sql: "SELECT tbl, row_id, version, hlc FROM ferry_rows ORDER BY tbl, row_id") {
                    state.append("  known \(row)")
                }
                return state
            }
        }
        for scope in ["user:alice", "user:bob", "team:sim"] {
            for id in Simulation.rowIDs {
                let table = id.hasPrefix("note") ? "note" : "item"
                guard let row = try await cluster.store.row(scope: scope, table: table, rowID: id) else { continue }
                let values = row.values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
                lines.append("server \(scope) \(id) v\(row.version)\(row.deleted ? " deleted" : "") \(values)")
            }
        }
        return canonical(lines.joined(separator: "\n"))
    }

    /// The text with UUIDs and loopback ports numbered by first appearance.
    static func canonical(_ text: String) -> String {
        var names: [String: String] = [:]
        func rename(_ pattern: String, _ prefix: String, in text: String) -> String {
            let expression = try! NSRegularExpression(pattern: pattern)
            let source = text as NSString
            var out = ""
            var last = 0
            for match in expression.matches(in: text, range: NSRange(location: 0, length: source.length)) {
                out += source.substring(with: NSRange(location: last, length: match.range.location - last))
                let found = source.substring(with: match.range)
                if names[found] == nil { names[found] = "\(prefix)\(names.count)" }
                out += names[found]!
                last = match.range.location + match.range.length
            }
            return out + source.substring(from: last)
        }
        let uuids = rename("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", "id#", in: text)
        return rename("127\\.0\\.0\\.1:[0-9]+", "server#", in: uuids)
    }
}
