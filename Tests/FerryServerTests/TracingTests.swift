import FerryProtocol
@testable import FerryServer
import Foundation
import Hummingbird
import HummingbirdTesting
import InMemoryTracing
import Synchronization
import Testing
import Tracing

/// Requests, pushes, merges and store calls are spans of whatever tracer
/// the app bootstraps (swift-distributed-tracing): here, an in-memory one.
@Suite(.serialized) struct TracingTests {
    @Test func aPushIsOneTraceThroughTheMergeAndTheStore() async throws {
        let server = try await TestServer()
        let alice = try await server.token("alice")
        let clientID = "traced-\(UUID().uuidString)"
        let recorded = try await RecordingTracer.shared.recording {
            try await server.withClient { client in
                let push = try JSONEncoder().encode(
                    PushRequest(clientID: clientID, mutations: [Mutations.upsert(1, row: "n1", ["t": "a"]), Mutations.upsert(2, row: "n2", ["t": "b"])]))
                let pushed = try await client.send(.post, "/v1/push", token: alice, json: String(decoding: push, as: UTF8.self))
                #expect(pushed.status == .ok, "\(pushed.text)")
                let pulled = try await client.send(.post, "/v1/pull", token: alice, json: #"{"clientID":"c1","scopes":[{"scope":"user:alice"}]}"#)
                #expect(pulled.status == .ok, "\(pulled.text)")
            }
        }
        // This test's push trace alone: other suites may push while the tracer records.
        let mine = try #require(
            recorded.first { (span: FinishedInMemorySpan) in span.operationName == "ferry.push" && span.attributes["ferry.client"]?.toSpanAttribute() == clientID.toSpanAttribute() })
        let pullTraces = Set(recorded.filter { $0.operationName == "ferry.store.pull" }.map(\.traceID))
        let spans = recorded.filter { $0.traceID == mine.traceID }
        let byName = Dictionary(spans.map { ($0.operationName, $0) }, uniquingKeysWith: { first, _ in first })
        let push = try #require(byName["ferry.push"], "\(spans.map(\.operationName))")
        let store = try #require(byName["ferry.store.push"])
        let merge = try #require(byName["ferry.merge"])
        let request = try #require(spans.first { $0.spanID == push.parentSpanID }, "the push's parent is its request's span")
        #expect(request.kind == .server && request.operationName.contains("/v1/push"), "\(request.operationName)")
        #expect(store.parentSpanID == push.spanID && merge.parentSpanID == store.spanID)
        #expect(Set([request.traceID, push.traceID, store.traceID, merge.traceID]).count == 1, "one trace")
        #expect(merge.attributes["ferry.mutations"]?.toSpanAttribute() == 2)
        #expect(!pullTraces.isEmpty && !pullTraces.contains(push.traceID), "the pull is a trace of its own")
    }
}

/// An in-memory tracer that records only inside ``recording(_:)``, so the
/// rest of the suite (it shares the process, and the tracer once
/// bootstrapped) keeps nothing.
final class RecordingTracer: Tracer, Sendable {
    typealias Span = AnySpan

    static let shared: RecordingTracer = {
        let tracer = RecordingTracer()
        InstrumentationSystem.bootstrap(tracer)
        return tracer
    }()

    private let inner = InMemoryTracer()
    private let on = Mutex(false)

    func recording(_ body: () async throws -> Void) async throws -> [FinishedInMemorySpan] {
        inner.clearAll(includingActive: true)
        on.withLock { $0 = true }
        defer { on.withLock { $0 = false } }
        try await body()
        return inner.popFinishedSpans()
    }

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> AnySpan {
        guard on.withLock({ $0 }) else { return AnySpan(NoOpTracer.NoOpSpan(context: context())) }
        return AnySpan(inner.startSpan(operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line))
    }

    func forceFlush() {}

    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject) where Inject.Carrier == Carrier {
        inner.inject(context, into: &carrier, using: injector)
    }

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract) where Extract.Carrier == Carrier {
        inner.extract(carrier, into: &context, using: extractor)
    }
}

/// One span type for both answers.
struct AnySpan: Tracing.Span {
    private let span: any Tracing.Span

    init(_ span: any Tracing.Span) {
        self.span = span
    }

    var context: ServiceContext { span.context }
    var operationName: String {
        get { span.operationName }
        nonmutating set { span.operationName = newValue }
    }
    var attributes: SpanAttributes {
        get { span.attributes }
        nonmutating set { span.attributes = newValue }
    }
    var isRecording: Bool { span.isRecording }
    func setStatus(_ status: SpanStatus) { span.setStatus(status) }
    func addEvent(_ event: SpanEvent) { span.addEvent(event) }
    func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        span.recordError(error, attributes: attributes, at: instant())
    }
    func addLink(_ link: SpanLink) { span.addLink(link) }
    func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) { span.end(at: instant()) }
}
