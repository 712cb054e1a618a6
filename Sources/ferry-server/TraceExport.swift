import Foundation
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// The spans `serve` exports when `otel.endpoint` is set: swift-otel's
/// tracer, sending batches over OTLP/HTTP (protobuf) to the collector's
/// `/v1/traces`.
///
/// Incoming W3C `traceparent` headers are honoured, so a client's trace
/// continues through the request, the push, the merge and the store.
/// The standard `OTEL_*` variables (`OTEL_SERVICE_NAME`,
/// `OTEL_BSP_SCHEDULE_DELAY`, …) tune the exporter as in any
/// OpenTelemetry SDK.
///
/// ```swift
/// let export = try TraceExport.bootstrap(endpoint: URL(string: "http://collector:4318")!)
/// // run `export` in the service group, before the app: it stops last and sends what is left.
/// ```
enum TraceExport {
    static func bootstrap(endpoint: URL) throws -> any Service {
        var configuration = OTel.Configuration.default
        configuration.serviceName = "ferry-server"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.diagnosticLogger = .custom(Logger(label: "ferry-server.otel"))
        configuration.diagnosticLogLevel = .warning
        configuration.propagators = [.traceContext]
        configuration.traces.otlpExporter.endpoint = endpoint.appending(path: "v1/traces").absoluteString
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(backend.factory)
        return Exporting(inner: backend.service)
    }

    /// The exporter as a service that never stops the server: a collector
    /// that is down, or a flush cut short when the server stops, costs
    /// spans and a warning, never the sync API or the exit status.
    private struct Exporting<Inner: Service>: Service {
        let inner: Inner

        func run() async throws {
            do {
                try await inner.run()
            } catch {
                Logger(label: "ferry-server.otel").warning("span export stopped", metadata: ["error": "\(error)"])
            }
            // Whatever ended the export, the server serves on until it is stopped.
            try? await gracefulShutdown()
        }
    }

    /// Log metadata naming the span a line was written in (`trace_id`,
    /// `span_id`), so logs and traces join.
    static let logMetadata: Logger.MetadataProvider = OTel.makeLoggingMetadataProvider()
}
