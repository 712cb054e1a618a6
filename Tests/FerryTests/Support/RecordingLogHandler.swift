@testable import Ferry
import Logging

/// A swift-log handler that keeps what it is given, for assertions.
struct RecordingLogHandler: LogHandler {
    struct Entry: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    let entries: Locked<[Entry]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let flattened = (event.metadata ?? [:]).mapValues { "\($0)" }
        entries.withLock { $0.append(Entry(level: event.level, message: "\(event.message)", metadata: flattened)) }
    }
}
