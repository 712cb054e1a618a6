import Ferry

/// The one line `ferry-notes sync` redraws on a terminal while it works:
/// what it is doing now, with a gauge only where the total is known.
///
/// Before the engine reports anything it says where it is connecting (a
/// server that does not answer is never silence); while sending, a gauge
/// of the changes acknowledged out of those queued; while receiving, a
/// gauge of the changes applied out of the server's estimate with the rate
/// and the time left (a first sync, or a notebook started over), or else
/// how many arrived; while waiting to retry, why.
///
/// ```swift
/// SyncProgress.line(nil, server: "http://127.0.0.1:8080")   // "connecting to http://127.0.0.1:8080…"
/// var status = SyncStatus()
/// status.phase = .pushing; status.pushed = 5; status.pendingCount = 15
/// SyncProgress.line(status, server: "…")                     // "sending   [#####---------------] 5/20"
/// ```
public enum SyncProgress {
    /// The gauge's width in cells, between its brackets.
    public static let gaugeWidth = 20

    /// The line for `status` (`nil` before the engine reports anything),
    /// syncing with `server`, receiving for `receiving` so far (the rate and
    /// the time left are worked out from it).
    ///
    /// ```swift
    /// SyncProgress.line(nil, server: "http://127.0.0.1:8080")   // "connecting to http://127.0.0.1:8080…"
    /// ```
    public static func line(_ status: SyncStatus?, server: String, receiving: Duration? = nil) -> String {
        guard let status else { return "connecting to \(server)…" }
        switch status.phase {
        case .idle:
            return "connecting to \(server)…"
        case .pushing:
            let total = status.pushed + status.pendingCount
            guard total > 0 else { return "sending…" }
            return "sending   " + gauge(status.pushed, of: total)
        case .pulling:
            let sent = status.pushed > 0 ? " (sent \(status.pushed))" : ""
            guard let total = status.pullEstimate, total > 0 else {
                return "receiving… \(status.pulled) change\(status.pulled == 1 ? "" : "s")" + sent
            }
            let done = min(status.pulled, total)
            var line = "receiving " + gauge(done, of: total)
            let seconds = receiving.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 } ?? 0
            if seconds >= 0.5, done > 0 {
                let rate = Double(done) / seconds
                line += " · \(Int(rate.rounded()))/s · " + Self.timeLeft(Double(total - done) / rate)
            }
            return line + sent
        case .backingOff:
            return "waiting to retry: \(status.lastError ?? "the server did not answer")"
        case .unauthorized:
            return "the server refused the token"
        }
    }

    /// `[#####---------------] 5/20`: `done` of `total` (above 0) in ``gaugeWidth`` cells.
    static func gauge(_ done: Int, of total: Int) -> String {
        let filled = gaugeWidth * min(done, total) / total
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: gaugeWidth - filled) + "] \(done)/\(total)"
    }

    /// `12 s left`, `4 min left`, `2 h 5 min left`.
    package static func timeLeft(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.up))
        switch whole {
        case ..<60: return "\(max(whole, 0)) s left"
        case ..<3600: return "\((whole + 59) / 60) min left"
        default: return "\(whole / 3600) h \((whole % 3600 + 59) / 60) min left"
        }
    }
}
