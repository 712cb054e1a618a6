import Ferry
import FerryProtocol
import Foundation

/// A transport that misbehaves on purpose, for tests: it wraps a real one
/// and drops, delays, duplicates or reorders the requests you pick.
///
/// ```swift
/// let faulty = FaultInjectingTransport(wrapping: URLSessionSyncTransport(baseURL: url))
/// faulty.inject(.dropResponse, on: .push)      // the server applies the push; the reply is lost
/// faulty.inject(.duplicate, on: .push, times: 3)
/// let engine = SyncEngine(database: database, transport: faulty, configuration: configuration, token: token)
/// ```
///
/// Faults are used in the order injected, one per request of that kind;
/// requests with no fault queued pass through untouched, unless random faults
/// are switched on with ``injectRandomly(_:on:probability:seed:)``.
public final class FaultInjectingTransport: SyncTransport {
    /// Which requests a fault applies to.
    public enum Operation: String, Sendable, Hashable {
        case push, pull
    }

    /// What goes wrong.
    public enum Fault: Sendable, Hashable {
        /// The request never reaches the server.
        case dropRequest
        /// The server handles the request, and its reply is lost.
        case dropResponse
        /// The request waits this long before it is sent.
        case delay(Duration)
        /// The request is sent twice at once; the first reply is returned.
        case duplicate
        /// The request is sent again right after its reply (a late copy);
        /// the first reply is returned. Unlike ``duplicate``, the order is
        /// fixed, so a seeded run that uses it replays exactly.
        case resend
        /// The request is sent, then the previous request of the same kind
        /// is sent again: a stale copy arriving after a newer one.
        case reorder
    }

    private struct State {
        var queued: [Operation: [Fault]] = [:]
        var random: [Operation: (faults: [Fault], probability: Double)] = [:]
        var generator = SplitMix64(seed: 0)
        var previousPush: PushRequest?
        var previousPull: PullRequest?
        var log: [String] = []
    }

    private let inner: any SyncTransport
    private let state = Locked(State())

    public init(wrapping inner: any SyncTransport) {
        self.inner = inner
    }

    /// Queues `fault` for the next `times` requests of `operation`.
    public func inject(_ fault: Fault, on operation: Operation, times: Int = 1) {
        state.withLock { $0.queued[operation, default: []] += Array(repeating: fault, count: times) }
    }

    /// Applies one of `faults`, chosen at random, to each request of
    /// `operation` with the given probability (seeded: a run repeats).
    public func injectRandomly(_ faults: [Fault], on operation: Operation, probability: Double, seed: UInt64) {
        state.withLock {
            $0.random[operation] = (faults, probability)
            $0.generator = SplitMix64(seed: seed)
        }
    }

    /// Stops random faults and drops queued ones.
    public func heal() {
        state.withLock {
            $0.queued = [:]
            $0.random = [:]
        }
    }

    /// What happened to each request, in order (for test messages).
    public var log: [String] { state.withLock { $0.log } }

    public func push(_ request: PushRequest, token: String?) async throws -> PushResponse {
        let (fault, previous) = state.withLock { state in
            defer { state.previousPush = request }
            return (Self.nextFault(for: .push, in: &state), state.previousPush)
        }
        return try await perform(fault, .push, request, previous) { try await self.inner.push($0, token: token) }
    }

    public func pull(_ request: PullRequest, token: String?) async throws -> PullResponse {
        let (fault, previous) = state.withLock { state in
            defer { state.previousPull = request }
            return (Self.nextFault(for: .pull, in: &state), state.previousPull)
        }
        return try await perform(fault, .pull, request, previous) { try await self.inner.pull($0, token: token) }
    }

    /// Passed through: faults are injected on push and pull.
    public func row(scope: String, table: String, rowID: String, token: String?) async throws -> ServerRow? {
        try await inner.row(scope: scope, table: table, rowID: rowID, token: token)
    }

    public func blobOffset(scope: String, sha256: String, token: String?) async throws -> Int64? {
        try await inner.blobOffset(scope: scope, sha256: sha256, token: token)
    }

    public func uploadBlob(
        scope: String, sha256: String, from reader: BlobReader, size: Int64, token: String?,
        progress: @escaping BlobProgress
    ) async throws -> Int64 {
        try await inner.uploadBlob(scope: scope, sha256: sha256, from: reader, size: size, token: token, progress: progress)
    }

    public func downloadBlob(
        scope: String, sha256: String, into writer: BlobWriter, token: String?,
        progress: @escaping BlobProgress
    ) async throws {
        try await inner.downloadBlob(scope: scope, sha256: sha256, into: writer, token: token, progress: progress)
    }

    public func live(scopes: [String], token: String?) -> AsyncThrowingStream<LiveMessage, any Error> {
        inner.live(scopes: scopes, token: token)
    }

    private static func nextFault(for operation: Operation, in state: inout State) -> Fault? {
        if var queued = state.queued[operation], !queued.isEmpty {
            let fault = queued.removeFirst()
            state.queued[operation] = queued
            return fault
        }
        if let random = state.random[operation], !random.faults.isEmpty {
            let roll = Double(state.generator.next() >> 11) / Double(1 << 53)
            if roll < random.probability {
                return random.faults[Int(state.generator.next() % UInt64(random.faults.count))]
            }
        }
        return nil
    }

    private func perform<Request: Sendable, Reply: Sendable>(
        _ fault: Fault?, _ operation: Operation, _ request: Request, _ previous: Request?,
        _ send: @escaping @Sendable (Request) async throws -> Reply
    ) async throws -> Reply {
        state.withLock { $0.log.append("\(operation.rawValue): \(fault.map { "\($0)" } ?? "passed")") }
        switch fault {
        case nil:
            return try await send(request)
        case .dropRequest:
            throw SyncTransportError.unreachable("fault injected: \(operation.rawValue) request dropped")
        case .dropResponse:
            _ = try await send(request)
            throw SyncTransportError.unreachable("fault injected: \(operation.rawValue) response dropped")
        case .delay(let duration):
            try await Task.sleep(for: duration)
            return try await send(request)
        case .duplicate:
            async let first = send(request)
            async let second = send(request)
            let reply = try await first
            _ = try? await second
            return reply
        case .resend:
            let reply = try await send(request)
            _ = try? await send(request)
            return reply
        case .reorder:
            let reply = try await send(request)
            if let previous { _ = try? await send(previous) }
            return reply
        }
    }
}
