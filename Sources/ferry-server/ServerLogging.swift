import Foundation
import Logging

/// The log handler `serve` installs: swift-log's text lines, or one JSON
/// object a line (`--log-format json`) with the time, level, label,
/// message and every metadata value (a request's `hb.request.id` among
/// them), for log pipelines that parse them. With a metadata provider
/// (the tracer's, when spans are exported), each line also carries what
/// it provides: the `trace_id` and `span_id` the line was written in.
///
/// ```swift
/// ServerLogging.bootstrap(format: "json", level: .info, metadataProvider: nil)
/// ```
enum ServerLogging {
    static func bootstrap(format: String, level: Logger.Level, metadataProvider: Logger.MetadataProvider?) {
        LoggingSystem.bootstrap(
            { label, provider in
                var handler: any LogHandler =
                    format == "json"
                    ? JSONLogHandler(label: label, metadataProvider: provider) : StreamLogHandler.standardError(label: label, metadataProvider: provider)
                handler.logLevel = level
                return handler
            }, metadataProvider: metadataProvider)
    }
}

/// One JSON object a line on standard error.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

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
        let provided = metadataProvider?.get() ?? [:]
        for (key, value) in provided.merging(metadata, uniquingKeysWith: { $1 }).merging(event.metadata ?? [:], uniquingKeysWith: { $1 })
        where fields[key] == nil {
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
