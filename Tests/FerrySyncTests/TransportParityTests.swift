@testable import Ferry
import FerryHTTPClient
import FerryProtocol
import Foundation
import Testing
import FerryTestSupport

/// Both transports against the real server on loopback: the AsyncHTTPClient
/// one (`FerryHTTPClient`) and the URLSession one (in `Ferry`, through
/// FoundationNetworking here), with the same requests and the same answers.
@Suite struct TransportParityTests {
    enum Kind: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case asyncHTTPClient, urlSession
        var testDescription: String { rawValue }

        func make(_ baseURL: URL) -> any SyncTransport {
            switch self {
            case .asyncHTTPClient: HTTPSyncTransport(baseURL: baseURL, requestTimeout: .seconds(10))
            case .urlSession: URLSessionSyncTransport(baseURL: baseURL, requestTimeout: .seconds(10))
            }
        }
    }

    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    /// Two devices sync edits, an update and a delete through one transport.
    @Test(arguments: Kind.allCases) func devicesConvergeThroughEitherTransport(_ kind: Kind) async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let a = try await Device.make("a", user: "alice", server: server, directory: directory, transport: { _ in kind.make(server.baseURL) })
            let b = try await Device.make("b", user: "alice", server: server, directory: directory, transport: { _ in kind.make(server.baseURL) })
            try a.execute("INSERT INTO note(id, title, body) VALUES ('n1', 'hello', 'é ✓ \"quoted\"')")
            try a.execute("INSERT INTO note(id, title) VALUES ('n2', 'gone soon')")
            let pushed = try await a.engine.sync()
            #expect(pushed.pushed == 2)
            try await b.engine.sync()
            #expect(try b.note("n1") == Note(title: "hello", body: "é ✓ \"quoted\"", counter: 0))
            try b.execute("UPDATE note SET title = 'edited on b' WHERE id = 'n1'")
            try b.execute("DELETE FROM note WHERE id = 'n2'")
            try await b.engine.sync()
            try await a.engine.sync()
            #expect(try a.notes() == ["n1": Note(title: "edited on b", body: "é ✓ \"quoted\"", counter: 0)])
        }
    }

    /// A row read, a missing row, a refused token, a gap and a closed port
    /// come back as the same values and errors.
    @Test(arguments: Kind.allCases) func answersAndFailuresAreTheSame(_ kind: Kind) async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let transport = kind.make(server.baseURL)
            let token = try await server.token("alice")
            let stamp = HLCTimestamp(wallMilliseconds: 1_000, counter: 0)
            let push = PushRequest(
                clientID: "parity-\(kind.rawValue)",
                mutations: [
                    Mutation(mutationID: 1, table: "note", rowID: "r/1?#", scope: "user:alice", operation: .upsert, columns: ["title": "x"], baseVersion: nil, hlc: stamp)
                ])
            let reply = try await transport.push(push, token: token)
            #expect(reply.lastAppliedMutationID == 1)
            #expect(reply.results.map(\.status) == [.applied])
            #expect(try await transport.row(scope: "user:alice", table: "note", rowID: "r/1?#", token: token)?.values == ["title": "x"])
            #expect(try await transport.row(scope: "user:alice", table: "note", rowID: "none", token: token) == nil)
            let pulled = try await transport.pull(PullRequest(clientID: "parity", scopes: [.init(scope: "user:alice")]), token: token)
            #expect(pulled.pages.first?.changes.map(\.rowID) == ["r/1?#"])

            do {
                _ = try await transport.pull(PullRequest(clientID: "parity", scopes: [.init(scope: "user:alice")]), token: "not a token")
                Issue.record("a bad token must be refused")
            } catch let error as SyncTransportError {
                guard case .http(401, let body, _) = error else { Issue.record("expected 401, got \(error)"); return }
                #expect(body?.code == .unauthorized)
            }
            var gap = push
            gap.mutations[0].mutationID = 5
            do {
                _ = try await transport.push(gap, token: token)
                Issue.record("a gap must be refused")
            } catch let error as SyncTransportError {
                guard case .http(409, let body, _) = error else { Issue.record("expected 409, got \(error)"); return }
                #expect(body?.lastAppliedMutationID == 1)
            }
            let closed = kind.make(URL(string: "http://127.0.0.1:9")!)
            do {
                _ = try await closed.push(push, token: token)
                Issue.record("a closed port must fail")
            } catch let error as SyncTransportError {
                guard case .unreachable = error else { Issue.record("expected unreachable, got \(error)"); return }
            }
        }
    }

    @Test(arguments: Kind.allCases) func attachmentBytesMoveThroughEitherTransport(_ kind: Kind) async throws {
        try await SyncServer.with(.sqlite) { server in
            let directory = try TemporaryDirectory()
            let transport = kind.make(server.baseURL)
            let token = try await server.token("alice")
            let bytes = AttachmentSyncTests.bytes(3 << 20 + 11, seed: 12)
            var digest = SHA256Digest()
            digest.update(bytes)
            let sha256 = digest.finalize()
            let file = directory.url.appending(path: "source")
            try bytes.write(to: file)
            #expect(try await transport.blobOffset(scope: "user:alice", sha256: sha256, token: token) == nil)
            // A body that stops after 1 MiB (the file is shorter than the
            // blob's length), then the rest from the server's offset.
            let head = directory.url.appending(path: "head")
            try bytes.prefix(1 << 20).write(to: head)
            _ = try? await transport.uploadBlob(
                scope: "user:alice", sha256: sha256, file: head, offset: 0,
                size: Int64(bytes.count), token: token)
            // Until the server has seen the cut body end, it answers 409 (as the engine's retries expect).
            var held: Int64 = 0
            var after: Int64 = 0
            let reported = Reported()
            for attempt in 1...40 {
                held = try await transport.blobOffset(scope: "user:alice", sha256: sha256, token: token) ?? 0
                #expect(held < Int64(bytes.count))
                do {
                    after = try await transport.uploadBlob(
                        scope: "user:alice", sha256: sha256, file: file, offset: held,
                        size: Int64(bytes.count), token: token, progress: { reported.value = $0 })
                    break
                } catch SyncTransportError.http(409, _, _) where attempt < 40 {
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            #expect(after == Int64(bytes.count) && reported.value == Int64(bytes.count))
            // Downloaded whole, then the tail again with a Range request.
            let copy = directory.url.appending(path: "copy")
            try await transport.downloadBlob(scope: "user:alice", sha256: sha256, into: copy, token: token)
            #expect(try Data(contentsOf: copy) == bytes)
            let resumed = directory.url.appending(path: "resumed")
            try bytes.prefix(2_000_000).write(to: resumed)
            try await transport.downloadBlob(scope: "user:alice", sha256: sha256, into: resumed, token: token)
            #expect(try Data(contentsOf: resumed) == bytes)
            do {
                try await transport.downloadBlob(
                    scope: "user:alice", sha256: String(repeating: "0", count: 64),
                    into: directory.url.appending(path: "none"), token: token)
                Issue.record("an absent blob must be a 404")
            } catch let error as SyncTransportError {
                guard case .http(404, _, _) = error else { Issue.record("expected 404, got \(error)"); return }
            }
        }
    }
}

final class Reported: @unchecked Sendable {
    // @unchecked: written by the transport before the call returns, read after.
    var value: Int64 = 0
}
