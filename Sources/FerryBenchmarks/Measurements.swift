import FerryProtocol
import Foundation

// What every scenario measures with: order statistics of durations, and how
// they and row counts print.

func median(_ values: [Duration]) -> Duration {
    percentile(values, 0.5)
}

/// The value at fraction `p` (0…1) of the sorted durations.
func percentile(_ values: [Duration], _ p: Double) -> Duration {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func format(_ duration: Duration) -> String {
    let s = seconds(duration)
    if s >= 1 { return String(format: "%.2f s", s) }
    if s >= 0.001 { return String(format: "%.1f ms", s * 1000) }
    return String(format: "%.1f µs", s * 1_000_000)
}

/// 1000000 → "1M", 10000 → "10k".
func countLabel(_ n: Int) -> String {
    n >= 1_000_000 && n % 1_000_000 == 0 ? "\(n / 1_000_000)M" : n >= 1000 && n % 1000 == 0 ? "\(n / 1000)k" : "\(n)"
}

/// A column as the server's stores keep it in a row's cells JSON, for
/// baselines that write rows straight into a store's table.
struct StoredCellJSON: Encodable {
    var clientID: String
    var hlc: HLCTimestamp
    var value: ColumnValue
    var version: Int64
}

/// A process's memory figure from `/proc/<pid>/status` (`VmRSS`: resident
/// now; `VmHWM`: peak resident), in bytes; 0 where there is no `/proc`.
func processMemory(_ field: String, of pid: Int32) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
        let kilobytes = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Int($0) })
    else { return 0 }
    return kilobytes * 1024
}
