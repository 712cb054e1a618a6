import AsyncHTTPClient
import FerryProtocol
import FerryServer
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// The fan-out scenario's child process: the writer and the live devices,
/// each device a user with one stream on its own connection.
extension FanOutBenchmark {
    /// When each device heard of each scope: one instant per event, in order.
    private final class Arrivals: Sendable {
        struct State {
            var byDevice: [[String: [ContinuousClock.Instant]]]
            var ready = 0
            var pages = 0
            var changes = 0
            var failed = 0
        }
        let state: Mutex<State>

        init(devices: Int) {
            state = Mutex(State(byDevice: Array(repeating: [:], count: devices)))
        }

        func count(_ scope: String, of devices: Range<Int>) -> [Int] {
            state.withLock { state in devices.map { state.byDevice[$0][scope]?.count ?? 0 } }
        }
    }

    static func scopes(devices: Int, groupSize: Int) -> (groups: [String], big: String) {
        ((0..<(devices + groupSize - 1) / groupSize).map { "g\($0)@bench" }, "all@bench")
    }

    public static func runClient(urls: [URL], devices: Int) async throws -> String {
        var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(10)))
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = devices + 32
        let report = try await withHTTPClient(configuration) { client in
            try await FanOutBenchmark(devices: devices).drive(client, urls: urls)
        }
        return String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
    }

    private func drive(_ client: HTTPClient, urls: [URL]) async throws -> Report {
        let authority = await TokenAuthority(secret: InitialSyncBenchmark.secret)
        let writer = try await authority.mint(userID: "bench", lifetime: .seconds(3600))
        var minted: [String] = []
        for device in 0..<devices {
            minted.append(try await authority.mint(userID: "d\(device)", lifetime: .seconds(3600)))
        }
        let tokens = minted
        let (groups, big) = Self.scopes(devices: devices, groupSize: groupSize)
        try await share(client, url: urls[0], writer: writer, groups: groups, big: big)
        Self.waitForGo("members")

        let arrivals = Arrivals(devices: devices)
        let streams = Task {
            await withTaskGroup(of: Void.self) { group in
                for device in 0..<devices {
                    let url = urls[device % urls.count]
                    let followed = [groups[device / groupSize], big]
                    group.addTask {
                        await Self.listen(client, url: url, token: tokens[device], device: device, scopes: followed, arrivals: arrivals)
                    }
                }
            }
        }
        defer { streams.cancel() }
        let deadline = ContinuousClock.now + .seconds(120)
        while arrivals.state.withLock({ $0.ready + $0.failed }) < devices {
            guard ContinuousClock.now < deadline else { throw BenchmarkError("the live streams did not all open in 120 s") }
            try await Task.sleep(for: .milliseconds(20))
        }
        Self.waitForGo("connected")

        var mutationID: Int64 = 0
        func timedWrite(_ scope: String, members: Range<Int>) async throws -> (last: Double, each: [Double]) {
            let counts = arrivals.count(scope, of: members)
            mutationID += 1
            let start = ContinuousClock.now
            try await push(client, url: urls[0], token: writer, scope: scope, id: mutationID)
            let deadline = start + .seconds(30)
            while zip(arrivals.count(scope, of: members), counts).contains(where: { $0.0 <= $0.1 }) {
                guard ContinuousClock.now < deadline else {
                    throw BenchmarkError("a write to \(scope) did not reach every member in 30 s")
                }
                try await Task.sleep(for: .milliseconds(1))
            }
            let each = arrivals.state.withLock { state in
                zip(members, counts).map { device, count in
                    seconds(state.byDevice[device][scope]![count] - start) * 1000
                }
            }
            return (each.max() ?? 0, each)
        }
        var report = Report(groupWrites: [], bigWrites: [], groupDeliveries: [], bigDeliveries: [], pages: 0, changes: 0, streamErrors: 0)
        for write in 0..<groupWrites {
            let group = write % groups.count
            let (last, each) = try await timedWrite(
                groups[group], members: (group * groupSize)..<min(devices, (group + 1) * groupSize))
            report.groupWrites.append(last)
            report.groupDeliveries += each
        }
        for _ in 0..<bigWrites {
            let (last, each) = try await timedWrite(big, members: 0..<devices)
            report.bigWrites.append(last)
            report.bigDeliveries += each
        }
        arrivals.state.withLock { state in
            report.pages = state.pages
            report.changes = state.changes
            report.streamErrors = state.failed
        }
        return report
    }

    /// The writer owns every scope; each device reads its group's and the big one.
    private func share(_ client: HTTPClient, url: URL, writer: String, groups: [String], big: String) async throws {
        for scope in groups + [big] {
            try await Self.send(client, .POST, url, "/v1/scopes", token: writer, body: #"{"scope":"\#(scope)"}"#)
        }
        let grants = (0..<devices).flatMap { device in [(groups[device / groupSize], device), (big, device)] }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for start in stride(from: 0, to: grants.count, by: grants.count / 16 + 1) {
                let slice = grants[start..<min(grants.count, start + grants.count / 16 + 1)]
                group.addTask {
                    for (scope, device) in slice {
                        try await Self.send(client, .PUT, url, "/v1/scopes/\(scope)/members/d\(device)", token: writer, body: #"{"role":"read"}"#)
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    private func push(_ client: HTTPClient, url: URL, token: String, scope: String, id: Int64) async throws {
        let stamp = HLCTimestamp(wallMilliseconds: Int64(Date().timeIntervalSince1970 * 1000), counter: 0)
        let mutation = Mutation(
            mutationID: id, table: "note", rowID: "r\(id)", scope: scope, operation: .upsert,
            columns: ["title": .text("write \(id)")], baseVersion: nil, hlc: stamp)
        let body = try JSONEncoder().encode(PushRequest(clientID: "writer", mutations: [mutation]))
        try await Self.send(client, .POST, url, "/v1/push", token: token, body: String(decoding: body, as: UTF8.self))
    }

    @discardableResult
    private static func send(_ client: HTTPClient, _ method: HTTPMethod, _ url: URL, _ path: String, token: String, body: String) async throws
        -> ByteBuffer
    {
        var request = HTTPClientRequest(url: url.absoluteString + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await client.execute(request, timeout: .seconds(30))
        let answer = try await response.body.collect(upTo: 1 << 20)
        guard (200..<300).contains(response.status.code) else {
            throw BenchmarkError("\(method) \(path) answered \(response.status): \(String(buffer: answer))")
        }
        return answer
    }

    /// One device's stream: each event that names a followed scope is an arrival.
    private static func listen(_ client: HTTPClient, url: URL, token: String, device: Int, scopes: [String], arrivals: Arrivals) async {
        let query = scopes.map { "scope=\($0)" }.joined(separator: "&")
        var request = HTTPClientRequest(url: url.absoluteString + "/v1/live?\(query)&rows=true")
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        var ready = false
        do {
            let response = try await client.execute(request, timeout: .seconds(3600))
            guard response.status == .ok else { throw BenchmarkError("the live stream answered \(response.status)") }
            var pending = ""
            for try await chunk in response.body {
                let now = ContinuousClock.now
                pending += String(buffer: chunk)
                while let end = pending.range(of: "\n\n") {
                    let event = pending[..<end.lowerBound]
                    pending = String(pending[end.upperBound...])
                    let name = event.split(separator: "\n").first { $0.hasPrefix("event: ") }?.dropFirst("event: ".count)
                    switch name {
                    case "ready":
                        ready = true
                        arrivals.state.withLock { $0.ready += 1 }
                    case "page", "change":
                        let named = scopes.filter { event.contains("\"\($0)\"") }
                        arrivals.state.withLock { state in
                            if name == "page" { state.pages += 1 } else { state.changes += 1 }
                            for scope in named { state.byDevice[device][scope, default: []].append(now) }
                        }
                    default:
                        continue
                    }
                }
            }
            // The server ended the stream (revoked, expired): a failure unless the benchmark is over.
            if !Task.isCancelled { throw BenchmarkError("the stream ended") }
        } catch {
            guard !Task.isCancelled else { return }
            arrivals.state.withLock { state in
                state.failed += 1
                if ready { state.ready -= 1 }
            }
        }
    }

    /// Tells the parent the phase is done and waits for its `go` (it reads the server's memory meanwhile).
    private static func waitForGo(_ phase: String) {
        FileHandle.standardOutput.write(Data("phase \(phase)\n".utf8))
        _ = Swift.readLine()
    }
}
