import FerryProtocol
import FerryTestSupport
import Foundation
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `ferry-server serve --otel-endpoint`: the real process exports its spans
/// over OTLP/HTTP to a collector (here, one in the test's process), and a
/// client's W3C `traceparent` makes the push part of the client's trace.
@Suite struct TraceExportTests {
    static let secret = "trace-export-secret-0123456789abcdef"

    @Test func aPushWithATraceparentIsExportedAsPartOfTheClientsTrace() async throws {
        let collector = try await OTLPCollector.start()
        do {
            try await exportsThePushUnderTheClientsTrace(to: collector)
        } catch {
            await collector.stop()
            throw error
        }
        await collector.stop()
    }

    private func exportsThePushUnderTheClientsTrace(to collector: OTLPCollector) async throws {
        let directory = try TemporaryDirectory()
        let server = try ServerProcess(
            [
                "serve", "--port", "0", "--data-dir", directory.path("data"), "--jwt-secret", Self.secret,
                "--otel-endpoint", "http://127.0.0.1:\(collector.port)", "--log-format", "json", "--log-level", "debug",
            ],
            environment: ["OTEL_BSP_SCHEDULE_DELAY": "100"], capturingErrors: true)
        defer { server.stop() }
        let port = try FerryServerCommandTests.port(from: try await server.waitForLine(startingWith: "Ferry server listening on http://127.0.0.1:"))
        let token = try ServerProcess.token(for: "alice", secret: Self.secret)

        // The client's trace: its id and the span the request was sent from.
        let traceID = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let clientSpanID = (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/push")!)
        request.httpMethod = "POST"
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("00-\(traceID)-\(clientSpanID)-01", forHTTPHeaderField: "traceparent")
        request.httpBody = try JSONEncoder().encode(
            PushRequest(clientID: "traced", mutations: [Mutations.upsert(1, row: "n1", ["t": "a"]), Mutations.upsert(2, row: "n2", ["t": "b"])]))
        let (body, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: body, as: UTF8.self))")

        let names = ["ferry.push", "ferry.store.push", "ferry.merge"]
        // The request's own span ends after the handler's, so it may come in a later batch: wait for it too.
        let exported = try await eventually(within: .seconds(20), every: .milliseconds(50)) {
            let spans = collector.spans.filter { $0.traceID == traceID }
            guard Set(names).isSubset(of: Set(spans.map(\.name))), let push = spans.first(where: { $0.name == "ferry.push" }) else { return false }
            return spans.contains { $0.spanID == push.parentSpanID }
        }
        let spans = collector.spans.filter { $0.traceID == traceID }
        #expect(exported, "the push's spans were not exported under the client's trace: \(collector.spans)")
        let byName = Dictionary(spans.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let push = try #require(byName["ferry.push"])
        let store = try #require(byName["ferry.store.push"])
        let merge = try #require(byName["ferry.merge"])
        let requestSpan = try #require(spans.first { $0.spanID == push.parentSpanID }, "the push's parent is its request's span: \(spans)")
        #expect(requestSpan.kind == 2, "a server span")
        #expect(requestSpan.parentSpanID == clientSpanID, "the request continues the client's span")
        #expect(store.parentSpanID == push.spanID && merge.parentSpanID == store.spanID)
        #expect(collector.serviceNames.contains("ferry-server"))

        // Log lines written inside the request name its trace, so logs and traces join.
        server.stop()
        let traced = server.printedErrors.compactMap { line in try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String] }
            .filter { $0["trace_id"] == traceID }
        #expect(!traced.isEmpty, "no log line carries the trace id: \(server.printedErrors.suffix(20))")
    }
}

/// An OTLP/HTTP collector on a loopback socket: it takes
/// `POST /v1/traces` in the protobuf encoding (the exporter's default)
/// and keeps each span's ids, name and kind, read straight off the wire.
final class OTLPCollector: Sendable {
    struct Span: Sendable, CustomStringConvertible {
        var traceID = "", spanID = "", parentSpanID = "", name = ""
        var kind: UInt64 = 0
        var description: String { "\(name) \(spanID)←\(parentSpanID)" }
    }

    private struct Received {
        var spans: [Span] = []
        var serviceNames: Set<String> = []
    }

    let port: Int
    private let received: NIOLockedValueBox<Received>
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    private init(port: Int, received: NIOLockedValueBox<Received>, group: ServiceGroup, running: Task<Void, any Error>) {
        self.port = port
        self.received = received
        self.group = group
        self.running = running
    }

    var spans: [Span] { received.withLockedValue { $0.spans } }
    var serviceNames: Set<String> { received.withLockedValue { $0.serviceNames } }

    static func start() async throws -> OTLPCollector {
        let received = NIOLockedValueBox(Received())
        let router = Router()
        router.post("/v1/traces") { request, _ -> Response in
            guard request.headers[.contentType] == "application/x-protobuf" else { return Response(status: .unsupportedMediaType) }
            let body = try await request.body.collect(upTo: 16 << 20)
            let decoded = try Self.decode(Array(buffer: body)[...])
            received.withLockedValue {
                $0.spans += decoded.spans
                $0.serviceNames.formUnion(decoded.services)
            }
            // An empty ExportTraceServiceResponse: full success.
            return Response(status: .ok, headers: [.contentType: "application/x-protobuf"], body: ResponseBody(byteBuffer: ByteBuffer()))
        }
        var logger = Logger(label: "otlp-collector")
        logger.logLevel = .error
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        let running = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        return OTLPCollector(port: port, received: received, group: group, running: running)
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await running.value
    }

    // MARK: Reading the protobuf wire format

    /// `ExportTraceServiceRequest` → `resource_spans` (1) → `resource` (1)
    /// and `scope_spans` (2) → `spans` (2).
    static func decode(_ bytes: ArraySlice<UInt8>) throws -> (spans: [Span], services: Set<String>) {
        var spans: [Span] = []
        var services: Set<String> = []
        for case (1, .bytes(let resourceSpans)) in try fields(bytes) {
            for field in try fields(resourceSpans) {
                switch field {
                case (1, .bytes(let resource)):
                    // Resource.attributes (1): KeyValue { key (1), value (2): AnyValue { string_value (1) } }.
                    for case (1, .bytes(let attribute)) in try fields(resource) {
                        let parts = try fields(attribute)
                        guard case (1, .bytes(let key))? = parts.first(where: { $0.0 == 1 }), String(decoding: key, as: UTF8.self) == "service.name",
                            case (2, .bytes(let value))? = parts.first(where: { $0.0 == 2 }),
                            case (1, .bytes(let text))? = try fields(value).first
                        else { continue }
                        services.insert(String(decoding: text, as: UTF8.self))
                    }
                case (2, .bytes(let scopeSpans)):
                    for case (2, .bytes(let encoded)) in try fields(scopeSpans) {
                        var span = Span()
                        for field in try fields(encoded) {
                            switch field {
                            case (1, .bytes(let id)): span.traceID = hex(id)
                            case (2, .bytes(let id)): span.spanID = hex(id)
                            case (4, .bytes(let id)): span.parentSpanID = hex(id)
                            case (5, .bytes(let name)): span.name = String(decoding: name, as: UTF8.self)
                            case (6, .number(let kind)): span.kind = kind
                            default: break
                            }
                        }
                        spans.append(span)
                    }
                default: break
                }
            }
        }
        return (spans, services)
    }

    enum FieldValue { case number(UInt64), bytes(ArraySlice<UInt8>) }

    struct Malformed: Error {}

    /// One message's fields, in order: varints and fixed-width numbers as
    /// numbers, length-delimited fields as their bytes.
    static func fields(_ bytes: ArraySlice<UInt8>) throws -> [(Int, FieldValue)] {
        var index = bytes.startIndex
        func varint() throws -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while index < bytes.endIndex, shift < 64 {
                let byte = bytes[index]
                index += 1
                value |= UInt64(byte & 0x7f) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            throw Malformed()
        }
        func fixed(_ width: Int) throws -> UInt64 {
            guard bytes.endIndex - index >= width else { throw Malformed() }
            defer { index += width }
            return bytes[index..<index + width].reversed().reduce(0) { $0 << 8 | UInt64($1) }
        }
        var result: [(Int, FieldValue)] = []
        while index < bytes.endIndex {
            let tag = try varint()
            let number = Int(tag >> 3)
            switch tag & 7 {
            case 0: result.append((number, .number(try varint())))
            case 1: result.append((number, .number(try fixed(8))))
            case 5: result.append((number, .number(try fixed(4))))
            case 2:
                let length = Int(try varint())
                guard length >= 0, bytes.endIndex - index >= length else { throw Malformed() }
                result.append((number, .bytes(bytes[index..<index + length])))
                index += length
            default: throw Malformed()
            }
        }
        return result
    }

    static func hex(_ bytes: ArraySlice<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
