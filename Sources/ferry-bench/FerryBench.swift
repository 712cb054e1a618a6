import ArgumentParser
import FerryBenchmarks
import Foundation

@main
struct FerryBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ferry-bench",
        abstract: "Measures Ferry side by side with a baseline run in the same process.",
        discussion: "Run with `swift run -c release ferry-bench [scenario…]`. Scenarios: \(Scenario.allCases.map(\.rawValue).joined(separator: ", ")).")

    enum Scenario: String, CaseIterable, ExpressibleByArgument {
        case localWrites = "local-writes"
        case pageApply = "page-apply"
        case initialSync = "initial-sync"
        case drain = "drain"
        case live = "live"
        case emptyPulls = "empty-pulls"
        case deviceScale = "device-scale"
        case postgresStore = "postgres-store"
        case attachments = "attachments"
        case notes = "notes"
        case wireBytes = "wire-bytes"
        case fanOut = "fan-out"
    }

    @Argument(help: "Scenarios to run (default: all).")
    var scenarios: [Scenario] = []

    @Option(help: "Rows in the bulk-insert transaction.")
    var bulkRows = 100_000

    @Option(help: "Single-row transactions per side.")
    var singleRowTransactions = 3_000

    @Option(help: "Rows a fresh device pulls in the initial-sync scenario; repeatable, one run each.")
    var syncRows: [Int] = [100_000, 1_000_000]

    @Option(help: "Pending mutations drained in the drain scenario.")
    var drainRows = 100_000

    @Option(help: "Rows per pulled page in the initial-sync scenario.")
    var syncPageSize = 1000

    @Option(help: "Edits timed in the live scenario.")
    var liveEdits = 1000

    @Option(help: "Rows in the big table of the device-scale scenario (the small one holds 10k).")
    var deviceScaleRows = 1_000_000

    @Option(help: "Rows in the big scope of the postgres-store scenario (the small one holds 10k).")
    var postgresScopeRows = 1_000_000

    @Option(help: "Rows pushed per side in the postgres-store scenario.")
    var postgresPushRows = 20_000

    @Option(help: "Notes in the notes scenario's database.")
    var notesCount = 100_000

    @Option(help: "Bytes of the file the attachments scenario uploads and downloads.")
    var attachmentBytes: Int64 = 1 << 30

    // The attachments scenario runs its devices in a child process.
    @Option(help: .hidden) var attachmentClientURL: String?
    @Option(help: .hidden) var attachmentClientToken: String?
    @Option(help: .hidden) var attachmentClientDirectory: String?
    @Option(help: .hidden) var attachmentClientTransport: String = AttachmentBenchmark.Transport.asyncHTTPClient.rawValue

    // The initial-sync scenario runs the syncing device in a child process.
    @Option(help: .hidden) var syncClientURL: String?
    @Option(help: .hidden) var syncClientToken: String?
    @Option(help: .hidden) var syncClientDirectory: String?

    @Option(help: "Live devices in the fan-out scenario (each a user with one stream).")
    var fanoutDevices = 1000

    // The fan-out scenario runs its devices and writer in a child process.
    @Option(help: .hidden) var fanoutClientUrls: String?

    func validate() throws {
        guard bulkRows > 0, singleRowTransactions > 0 else {
            throw ValidationError("row and transaction counts must be positive")
        }
    }

    func run() async throws {
        if let url = attachmentClientURL.flatMap(URL.init(string:)), let token = attachmentClientToken,
            let directory = attachmentClientDirectory
        {
            let report = try await AttachmentBenchmark.runClient(
                url: url, token: token, directory: URL(fileURLWithPath: directory),
                bytes: attachmentBytes, transport: AttachmentBenchmark.Transport(rawValue: attachmentClientTransport) ?? .asyncHTTPClient)
            print(String(decoding: try JSONEncoder().encode(report), as: UTF8.self))
            return
        }
        if let url = syncClientURL.flatMap(URL.init(string:)), let token = syncClientToken, let directory = syncClientDirectory {
            let report = try await InitialSyncBenchmark.runClient(
                url: url, token: token, directory: URL(fileURLWithPath: directory),
                pageSize: syncPageSize)
            print(String(decoding: try JSONEncoder().encode(report), as: UTF8.self))
            return
        }
        if let urls = fanoutClientUrls {
            print(try await FanOutBenchmark.runClient(urls: urls.split(separator: ",").compactMap { URL(string: String($0)) }, devices: fanoutDevices))
            return
        }
        #if DEBUG
            print("warning: a debug build; run with `swift run -c release ferry-bench` for real numbers")
        #endif
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var results: [BenchmarkResult] = []
        for scenario in scenarios.isEmpty ? Scenario.allCases : scenarios {
            switch scenario {
            case .localWrites:
                results += try LocalWriteBenchmark(bulkRows: bulkRows, singleRowTransactions: singleRowTransactions)
                    .run(in: directory)
            case .pageApply:
                results += try DeviceApplyBenchmark().runPageApply(in: directory)
            case .drain:
                results += try await DrainBenchmark(rows: drainRows).run(in: directory)
            case .live:
                results += try await ServerRoundTripBenchmark(liveEdits: liveEdits).runLive(in: directory)
            case .emptyPulls:
                results += try await ServerRoundTripBenchmark().runEmptyPulls(in: directory)
            case .deviceScale:
                results += try DeviceApplyBenchmark(bigTableRows: deviceScaleRows).runScale(in: directory)
            case .initialSync:
                for rows in syncRows {
                    results += try await InitialSyncBenchmark(rows: rows, pageSize: syncPageSize).run(in: directory)
                }
            case .postgresStore:
                guard PostgresStoreBenchmark.isConfigured || !scenarios.isEmpty else {
                    // Every scenario was asked for, and there is no cluster: say so, run the rest.
                    print("postgres-store skipped: no PostgreSQL cluster; run through scripts/with-postgres")
                    continue
                }
                results += try await PostgresStoreBenchmark(bigScopeRows: postgresScopeRows, pushRows: postgresPushRows).run()
            case .attachments:
                results += try await AttachmentBenchmark(bytes: attachmentBytes).run(in: directory)
            case .notes:
                results += try NotesQueryBenchmark(notes: notesCount).run(in: directory)
            case .fanOut:
                results += try await FanOutBenchmark(devices: fanoutDevices).run(in: directory)
            case .wireBytes:
                results += try await WireBytesBenchmark(rows: syncRows.first ?? 100_000).run(in: directory)
            }
        }
        print(BenchmarkResult.table(results))
    }
}
