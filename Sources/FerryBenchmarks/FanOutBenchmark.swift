import AsyncHTTPClient
import FerryProtocol
import FerryServer
import Foundation
import NIOCore
import Synchronization

/// Scenarios 12 and 12b (issue 34): one write reaching every live member of
/// its scope. A thousand devices, each a user of its own with one live
/// stream (`rows=true`) on its own connection, follow two scopes: one of 100
/// shared scopes of 10 members, and one scope all 1,000 share. A writer
/// pushes one row at a time and waits until every member has the event;
/// the time to the last member is the write's latency.
///
/// The devices and the writer run in a child process (`ferry-bench
/// --fanout-client-urls …`), the servers in their own: on SQLite one
/// instance, on PostgreSQL two on one database with half the devices each
/// (the writer pushes to the first). The server's memory per subscriber is
/// its RSS growth from before the streams open to after the writes, over
/// the number of streams.
///
/// ```swift
/// let results = try await FanOutBenchmark(devices: 1000).run(in: directory)
/// ```
public struct FanOutBenchmark: Sendable {
    public var devices: Int
    /// Members of each small shared scope.
    public var groupSize = 10
    /// Writes timed into the small scopes (one per scope, round robin) and into the big one.
    public var groupWrites = 200
    public var bigWrites = 30

    public init(devices: Int = 1000) {
        self.devices = devices
    }

    /// What the child process reports.
    struct Report: Codable {
        /// Per write into a small scope: milliseconds until every member had it.
        var groupWrites: [Double]
        /// Per write into the big scope.
        var bigWrites: [Double]
        /// Per member and write: milliseconds until that member had it.
        var groupDeliveries: [Double]
        var bigDeliveries: [Double]
        /// Events that came as `page` (rows in the event) and as `change` (the device must pull).
        var pages: Int
        var changes: Int
        /// Streams refused, or ended before the last write.
        var streamErrors: Int
    }

    public func run(in directory: URL) async throws -> [BenchmarkResult] {
        let (results, single) = try await run(instances: [[]], label: "SQLite, one instance", in: directory)
        guard PostgresStoreBenchmark.isConfigured else {
            print("fan-out on PostgreSQL skipped: no PostgreSQL cluster; run through scripts/with-postgres")
            return results
        }
        let (postgresOne, one) = try await ThrowawayPostgresDatabase.with(prefix: "ferry_bench_fanout") { database in
            try await run(instances: [["--postgres", database.url]], label: "PostgreSQL, one instance", in: directory)
        }
        let (postgresTwo, two) = try await ThrowawayPostgresDatabase.with(prefix: "ferry_bench_fanout") { database in
            try await run(
                instances: [["--postgres", database.url], ["--postgres", database.url]], label: "PostgreSQL, two instances",
                in: directory)
        }
        // 12b: scaling out keeps the single instance's figure within half again. Read two ways: against one
        // instance on the same PostgreSQL (what scaling out itself costs), and against the embedded store's
        // one instance (which also counts what a PostgreSQL write costs over a SQLite one).
        func p99(_ values: [Double]) -> Double { Self.percentile(values, 0.99) }
        let members = [("10 members", \Report.groupWrites), ("\(devices) members", \Report.bigWrites)]
        let scaled = [("one PostgreSQL instance", one), ("one SQLite instance", single)].flatMap { reference, figures in
            members.map { name, writes in
                BenchmarkResult(
                    scenario: "fan-out, PostgreSQL, two instances of \(devices / 2) streams each vs \(reference): p99 of a write seen by all \(name)",
                    ferry: String(format: "%.1f ms", p99(two[keyPath: writes])), baseline: String(format: "%.1f ms", p99(figures[keyPath: writes])),
                    ratio: p99(two[keyPath: writes]) / p99(figures[keyPath: writes]), goal: 1.5, direction: .atMost)
            }
        }
        return results + postgresOne + postgresTwo + scaled
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    private func run(instances: [[String]], label: String, in directory: URL) async throws -> ([BenchmarkResult], Report) {
        var servers: [ServerRoundTripBenchmark.Server] = []
        defer {
            for server in servers {
                server.process.terminate()
                server.process.waitUntilExit()
            }
        }
        for (index, arguments) in instances.enumerated() {
            servers.append(
                try ServerRoundTripBenchmark.startServer(
                    in: directory, name: "fanout-\(label.filter(\.isLetter))-\(index)", arguments: arguments))
        }
        let child = Process()
        child.executableURL = try InitialSyncBenchmark.sibling("ferry-bench")
        child.arguments = [
            "--fanout-client-urls", servers.map(\.url.absoluteString).joined(separator: ","),
            "--fanout-devices", String(devices),
        ]
        let output = Pipe(), input = Pipe()
        child.standardOutput = output
        child.standardInput = input
        try child.run()
        var printed = Data()
        var before: [Int] = [], connected: [Int] = []
        while true {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            printed.append(chunk)
            let text = String(decoding: printed, as: UTF8.self)
            if before.isEmpty, text.contains("phase members\n") {
                before = servers.map { processMemory("VmRSS", of: $0.process.processIdentifier) }
                input.fileHandleForWriting.write(Data("go\n".utf8))
            }
            if connected.isEmpty, text.contains("phase connected\n") {
                connected = servers.map { processMemory("VmRSS", of: $0.process.processIdentifier) }
                input.fileHandleForWriting.write(Data("go\n".utf8))
            }
        }
        child.waitUntilExit()
        let after = servers.map { processMemory("VmRSS", of: $0.process.processIdentifier) }
        guard child.terminationStatus == 0,
            let line = String(decoding: printed, as: UTF8.self).split(separator: "\n").last(where: { $0.hasPrefix("{") })
        else {
            throw BenchmarkError("the fan-out client failed: \(String(decoding: printed, as: UTF8.self).suffix(2000))")
        }
        let report = try JSONDecoder().decode(Report.self, from: Data(line.utf8))
        return (results(report, label: label, before: before, connected: connected, after: after), report)
    }

    private func results(_ report: Report, label: String, before: [Int], connected: [Int], after: [Int]) -> [BenchmarkResult] {
        func ms(_ values: [Double], _ p: Double) -> Double { Self.percentile(values, p) }
        let perSubscriber = Double(zip(before, after).map { max($0.1, 0) - $0.0 }.reduce(0, +)) / Double(devices)
        let atConnect = Double(zip(before, connected).map { $0.1 - $0.0 }.reduce(0, +)) / Double(devices)
        let prefix = "fan-out, \(label), \(devices) live devices"
        return [
            BenchmarkResult(
                scenario: "\(prefix): a write seen by all \(groupSize) members of a shared scope, p99 (p50) over \(report.groupWrites.count) writes",
                ferry: String(format: "%.1f ms (%.1f ms)", ms(report.groupWrites, 0.99), ms(report.groupWrites, 0.5)),
                baseline: "100 ms", ratio: ms(report.groupWrites, 0.99) / 100, goal: 1, direction: .atMost),
            BenchmarkResult(
                scenario: "\(prefix): a write seen by all \(devices) members of one scope, p99 (p50) over \(report.bigWrites.count) writes",
                ferry: String(format: "%.1f ms (%.1f ms)", ms(report.bigWrites, 0.99), ms(report.bigWrites, 0.5)),
                baseline: "250 ms", ratio: ms(report.bigWrites, 0.99) / 250, goal: 1, direction: .atMost),
            BenchmarkResult(
                scenario: "\(prefix): each member's delivery, p99 (p50), small scopes / the big scope",
                ferry: String(
                    format: "%.1f (%.1f) / %.1f (%.1f) ms", ms(report.groupDeliveries, 0.99), ms(report.groupDeliveries, 0.5),
                    ms(report.bigDeliveries, 0.99), ms(report.bigDeliveries, 0.5)),
                baseline: "—", ratio: .nan, goal: .nan, direction: .atMost),
            BenchmarkResult(
                scenario: "\(prefix): server RSS per live subscriber, after the writes (at connect: \(String(format: "%.1f", atConnect / 1024)) KiB)",
                ferry: String(format: "%.1f KiB", perSubscriber / 1024), baseline: "64 KiB", ratio: perSubscriber / 65536, goal: 1,
                direction: .atMost),
            BenchmarkResult(
                scenario: "\(prefix): streams failed; events as rows (page) / as news to pull (change)",
                ferry: "\(report.streamErrors) failed; \(report.pages) / \(report.changes)", baseline: "0 failed",
                ratio: Double(report.streamErrors), goal: 0, direction: .atMost),
        ]
    }
}
