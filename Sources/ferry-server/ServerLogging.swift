import Foundation
import Logging

/// The log handler `serve` installs: swift-log's text lines, or one JSON
/// object a line (`--log-format json`) with the time, level, label,
/// message and every metadata value (a request's `hb.request.id` among
/// them), for log pipelines that parse them.
///
/// ```swift
/// LoggingSystem.bootstrap(ServerLogging.handler(format: "json", level: .info))
/// ```
enum ServerLogging {
    static func handler(format: String, level: Logger.Level) -> @Sendable (String) -> any LogHandler {
        { label in
            var handler: any LogHandler = format == "json" ? JSONLogHandler(label: label) : StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

/// One JSON object a line on standard error.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields: [String: String] = [
            "time": Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)),
            "level": event.level.rawValue,
            "label": label,
            "message": event.message.description,
            "source": event.source,
        ]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) where fields[key] == nil {
            fields[key] = value.description
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard var line = try? encoder.encode(fields) else { return }
        line.append(UInt8(ascii: "\n"))
        // One write per line: lines from several threads never interleave.
        FileHandle.standardError.write(line)
    }
}
