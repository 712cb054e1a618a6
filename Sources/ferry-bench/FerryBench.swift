import ArgumentParser
import FerryBenchmarks
import Foundation

@main
struct FerryBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ferry-bench",
        abstract: "Measures Ferry side by side with a baseline run in the same process.",
        discussion: "Run with `swift run -c release ferry-bench [scenario…]`. Scenarios: \(Scenario.allCases.map(\.rawValue).joined(separator: ", ")).")

    enum Scenario: String, CaseIterable, ExpressibleByArgument {
        case localWrites = "local-writes"
    }

    @Argument(help: "Scenarios to run (default: all).")
    var scenarios: [Scenario] = []

    @Option(help: "Rows in the bulk-insert transaction.")
    var bulkRows = 100_000

    @Option(help: "Single-row transactions per side.")
    var singleRowTransactions = 3_000

    func validate() throws {
        guard bulkRows > 0, singleRowTransactions > 0 else {
            throw ValidationError("row and transaction counts must be positive")
        }
    }

    func run() throws {
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
            }
        }
        print(BenchmarkResult.table(results))
    }
}
