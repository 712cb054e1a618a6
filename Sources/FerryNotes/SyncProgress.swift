import Ferry

/// The one line `ferry-notes sync` redraws on a terminal while it works:
/// what it is doing now, with a gauge only where the total is known.
///
/// Before the engine reports anything it says where it is connecting (a
/// server that does not answer is never silence); while sending, a gauge
/// of the changes acknowledged out of those queued; while receiving, how
/// many changes arrived (the total is not known ahead); while waiting to
/// retry, why.
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
    /// syncing with `server`.
    ///
    /// ```swift
    /// SyncProgress.line(nil, server: "http://127.0.0.1:8080")   // "connecting to http://127.0.0.1:8080…"
    /// ```
    public static func line(_ status: SyncStatus?, server: String) -> String {
        guard let status else { return "connecting to \(server)…" }
        switch status.phase {
        case .idle:
            return "connecting to \(server)…"
        case .pushing:
            let total = status.pushed + status.pendingCount
            guard total > 0 else { return "sending…" }
            let filled = gaugeWidth * min(status.pushed, total) / total
            return "sending   [" + String(repeating: "#", count: filled) + String(repeating: "-", count: gaugeWidth - filled) + "] \(status.pushed)/\(total)"
        case .pulling:
            return "receiving… \(status.pulled) change\(status.pulled == 1 ? "" : "s")"
                + (status.pushed > 0 ? " (sent \(status.pushed))" : "")
        case .backingOff:
            return "waiting to retry: \(status.lastError ?? "the server did not answer")"
        case .unauthorized:
            return "the server refused the token"
        }
    }
}
