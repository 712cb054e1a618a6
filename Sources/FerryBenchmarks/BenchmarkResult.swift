/// One row of `ferry-bench` output: Ferry's figure next to its baseline,
/// both measured in the same run.
public struct BenchmarkResult: Sendable {
    public enum Direction: Sendable {
        /// The goal is a ratio at most the target (Ferry's cost over the baseline's).
        case atMost
        /// The goal is a ratio at least the target (Ferry's throughput over the baseline's).
        case atLeast
    }

    public var scenario: String
    public var ferry: String
    public var baseline: String
    public var ratio: Double
    public var goal: Double
    public var direction: Direction

    public init(scenario: String, ferry: String, baseline: String, ratio: Double, goal: Double, direction: Direction) {
        self.scenario = scenario
        self.ferry = ferry
        self.baseline = baseline
        self.ratio = ratio
        self.goal = goal
        self.direction = direction
    }

    public var met: Bool {
        switch direction {
        case .atMost: ratio <= goal
        case .atLeast: ratio >= goal
        }
    }

    public var goalText: String {
        (direction == .atMost ? "≤ " : "≥ ") + String(format: "%.2f×", goal)
    }

    /// A Markdown table of results.
    public static func table(_ results: [BenchmarkResult]) -> String {
        var lines = ["| scenario | Ferry | baseline | ratio | goal | met |", "|---|---|---|---|---|---|"]
        for result in results {
            guard !result.ratio.isNaN else {
                lines.append("| \(result.scenario) | \(result.ferry) | \(result.baseline) | — | — | — |")
                continue
            }
            guard !result.goal.isNaN else {
                // A comparison shown for context; the scenario's goal is on another row.
                lines.append("| \(result.scenario) | \(result.ferry) | \(result.baseline) | \(String(format: "%.2f×", result.ratio)) | — | — |")
                continue
            }
            lines.append("| \(result.scenario) | \(result.ferry) | \(result.baseline) | \(String(format: "%.2f×", result.ratio)) | \(result.goalText) | \(result.met ? "yes" : "no") |")
        }
        return lines.joined(separator: "\n")
    }
}
