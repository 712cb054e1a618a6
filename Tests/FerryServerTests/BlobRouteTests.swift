import Crypto
@testable import FerryServer
import FerryProtocol
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// `/v1/blobs/{scope}/{sha256}` over HTTP: status codes, headers, ranges
/// and access, against the real router and the real file blob store.
@Suite struct BlobRouteTests {
    static let offset = HTTPField.Name("Upload-Offset")!
    static let length = HTTPField.Name("Upload-Length")!

    static func blob(_ count: Int) -> (bytes: [UInt8], sha: String) {
        let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
        return (bytes, hexDigest(SHA256.hash(data: bytes)))
    }

    static func put(
        _ client: any TestClientProtocol, _ path: String, token: String, _ bytes: ArraySlice<UInt8>,
        offset: Int? = nil, length: Int
    ) async throws -> TestResponse {
        var headers: HTTPFields = [.authorization: "Bearer \(token)", Self.length: String(length)]
        if let offset { headers[Self.offset] = String(offset) }
        return try await client.execute(uri: path, method: .put, headers: headers, body: ByteBuffer(bytes: bytes))
    }

    static func get(
        _ client: any TestClientProtocol, _ path: String, method: HTTPRequest.Method = .get,
        token: String, range: String? = nil
    ) async throws -> TestResponse {
        var headers: HTTPFields = [.authorization: "Bearer \(token)"]
        if let range { headers[.range] = range }
        return try await client.execute(uri: path, method: method, headers: headers, body: nil)
    }

    /// Attachment bytes are taken from the user's bucket by the route a
    /// request matched (a `//` in the path changes nothing), an upload's
    /// before its body is read and a download's before its first byte.
    @Test func blobBytesAreTakenByRouteBeforeAnyByteMovesEitherWay() async throws {
        let server = try await TestServer {
            $0.rateLimits.blobBytes = RateLimit(perSecond: 1, burst: 1000)
            $0.rateLimits.requests = nil
        }
        let alice = try await server.token("alice")
        let (first, firstSHA) = Self.blob(800)
        let (second, secondSHA) = Self.blob(801)
        try await server.withClient { client in
            let put = try await Self.put(client, "/v1/blobs/user:alice/\(firstSHA)", token: alice, first[...], length: 800)
            #expect(put.status == .created)
            // 200 bytes left: the next upload is refused, however its path is written.
            let disguised = try await Self.put(client, "/v1//blobs/user:alice/\(secondSHA)", token: alice, second[...], length: 801)
            #expect(disguised.status == .tooManyRequests && disguised.headers[.retryAfter] != nil, "\(disguised.status)")
            // A download of 800 bytes is refused before its first byte.
            let download = try await Self.get(client, "/v1/blobs/user:alice/\(firstSHA)", token: alice)
            #expect(download.status == .tooManyRequests && download.body.readableBytes < 800, "\(download.status)")
        }
    }

    @Test func anUploadIsReadBackWholeOrByRange() async throws {
        let server = try await TestServer()
        let alice = try await server.token("alice")
        let (bytes, sha) = Self.blob(300_000)
        let path = "/v1/blobs/user:alice/\(sha)"
        try await server.withClient { client in
            #expect(try await Self.get(client, path, method: .head, token: alice).status == .notFound)
            let put = try await Self.put(client, path, token: alice, bytes[...], length: bytes.count)
            #expect(put.status == .created)
            #expect(put.headers[Self.offset] == "300000")
            let again = try await Self.put(client, path, token: alice, bytes[...], length: bytes.count)
            #expect(again.status == .ok)
            let head = try await Self.get(client, path, method: .head, token: alice)
            #expect(head.status == .ok && head.headers[Self.offset] == "300000" && head.headers[Self.length] == "300000")
            let whole = try await Self.get(client, path, token: alice)
            #expect(whole.status == .ok)
            #expect(Array(whole.body.readableBytesView) == bytes)
            #expect(whole.headers[.contentType] == "application/octet-stream" && whole.headers[.eTag] == "\"\(sha)\"")
            let part = try await Self.get(client, path, token: alice, range: "bytes=1000-1999")
            #expect(part.status == .partialContent)
            #expect(part.headers[.contentRange] == "bytes 1000-1999/300000")
            #expect(Array(part.body.readableBytesView) == Array(bytes[1000..<2000]))
            let outside = try await Self.get(client, path, token: alice, range: "bytes=300000-")
            #expect(outside.status == .rangeNotSatisfiable && outside.headers[.contentRange] == "bytes */300000")
        }
        // Bytes on the wire are the file's bytes: counted in and out.
        let text = server.metrics.render()
        #expect(text.contains(#"ferry_blob_bytes_total{direction="in"} 300000"#))
        #expect(text.contains(#"ferry_blob_bytes_total{direction="out"} 301000"#))
    }

    @Test func aResumedUploadContinuesAtTheServersOffset() async throws {
        let server = try await TestServer()
        let alice = try await server.token("alice")
        let (bytes, sha) = Self.blob(100_000)
        let path = "/v1/blobs/user:alice/\(sha)"
        try await server.withClient { client in
            let first = try await Self.put(client, path, token: alice, bytes[..<40_000], length: bytes.count)
            #expect(first.status == .noContent && first.headers[Self.offset] == "40000")
            let head = try await Self.get(client, path, method: .head, token: alice)
            #expect(head.headers[Self.offset] == "40000" && head.headers[Self.length] == "100000")
            #expect(try await Self.get(client, path, token: alice).status == .notFound)
            let wrong = try await Self.put(client, path, token: alice, bytes[10_000...], offset: 10_000, length: bytes.count)
            #expect(wrong.status == .conflict && wrong.headers[Self.offset] == "40000")
            #expect(try wrong.decode(ErrorResponse.self).code == .uploadOffsetMismatch)
            let rest = try await Self.put(client, path, token: alice, bytes[40_000...], offset: 40_000, length: bytes.count)
            #expect(rest.status == .created && rest.headers[Self.offset] == "100000")
            #expect(Array(try await Self.get(client, path, token: alice).body.readableBytesView) == bytes)
        }
        #expect(server.metrics.render().contains("ferry_blob_uploads_resumed_total 2"))
    }

    @Test func badUploadsAreRefusedAndKeepNothing() async throws {
        let server = try await TestServer { $0.limits.maxBlobBytes = 50_000 }
        let alice = try await server.token("alice")
        let (bytes, sha) = Self.blob(40_000)
        try await server.withClient { client in
            // Another blob's bytes under this name.
            var other = bytes
            other[20_000] ^= 0xff
            let forged = try await Self.put(client, "/v1/blobs/user:alice/\(sha)", token: alice, other[...], length: 40_000)
            #expect(forged.status == .unprocessableContent)
            #expect(try forged.decode(ErrorResponse.self).code == .hashMismatch)
            #expect(try await Self.get(client, "/v1/blobs/user:alice/\(sha)", method: .head, token: alice).status == .notFound)
            // Over the limit: refused from the header, before the body.
            let large = try await Self.put(client, "/v1/blobs/user:alice/\(sha)", token: alice, bytes[...], length: 60_000)
            #expect(large.status == .contentTooLarge)
            let badName = try await Self.put(client, "/v1/blobs/user:alice/abc", token: alice, bytes[...], length: bytes.count)
            #expect(badName.status == .badRequest)
            let noLength = try await client.execute(
                uri: "/v1/blobs/user:alice/\(sha)", method: .put,
                headers: [.authorization: "Bearer \(alice)", Self.offset: "10"],
                body: ByteBuffer(bytes: bytes[10...]))
            #expect(noLength.status == .badRequest)
        }
    }

    @Test func aNonMemberGetsTheSame403WhetherTheBlobExistsOrNot() async throws {
        let server = try await TestServer()
        try await server.store.createScope("team:secret", owner: "bob")
        let bob = try await server.token("bob")
        let mallory = try await server.token("mallory")
        let (bytes, sha) = Self.blob(5000)
        let (_, absent) = Self.blob(5001)
        try await server.withClient { client in
            #expect(try await Self.put(client, "/v1/blobs/team:secret/\(sha)", token: bob, bytes[...], length: bytes.count).status == .created)
            var answers: [String] = []
            for name in [sha, absent] {
                let path = "/v1/blobs/team:secret/\(name)"
                let get = try await Self.get(client, path, token: mallory)
                let head = try await Self.get(client, path, method: .head, token: mallory)
                let put = try await Self.put(client, path, token: mallory, bytes[...], length: bytes.count)
                #expect([get.status, head.status, put.status] == [.forbidden, .forbidden, .forbidden])
                answers.append(get.text.replacingOccurrences(of: name, with: "NAME") + put.text.replacingOccurrences(of: name, with: "NAME"))
            }
            #expect(answers[0] == answers[1])
            // Bob's personal scope is his alone, too.
            #expect(try await Self.get(client, "/v1/blobs/user:bob/\(sha)", token: mallory).status == .forbidden)
        }
    }

    /// A writer's `HEAD` keeps a whole blob from the collector (a push naming
    /// it may follow); a reader's `HEAD` only asks, so a read-only member
    /// asking again and again cannot keep a blob no row names alive.
    @Test func onlyAWritersHeadKeepsABlobFromTheCollector() async throws {
        let server = try await TestServer()
        try await server.store.createScope("team:x", owner: "olga")
        try await server.store.setMember("rita", role: .read, in: "team:x")
        let olga = try await server.token("olga")
        let rita = try await server.token("rita")
        let (readBytes, readSHA) = Self.blob(6000)
        let (writeBytes, writeSHA) = Self.blob(6001)
        let blobs = try #require(try server.store.makeBlobStore(maxBlobBytes: 1 << 30) as? FileBlobStore)
        @Sendable func age(_ sha: String) throws {
            let paths = FileBlobStore.Paths(blobs.directory, try BlobKey(scope: "team:x", sha256: sha))
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-3600)], ofItemAtPath: paths.complete.path)
        }
        try await server.withClient { client in
            for (bytes, sha) in [(readBytes, readSHA), (writeBytes, writeSHA)] {
                #expect(try await Self.put(client, "/v1/blobs/team:x/\(sha)", token: olga, bytes[...], length: bytes.count).status == .created)
                try age(sha)
            }
            for _ in 0..<3 {
                #expect(try await Self.get(client, "/v1/blobs/team:x/\(readSHA)", method: .head, token: rita).status == .ok)
            }
            #expect(try await Self.get(client, "/v1/blobs/team:x/\(writeSHA)", method: .head, token: olga).status == .ok)
        }
        let removed = try await BlobGarbageRules.collect(store: server.store, blobs: blobs, before: Date().addingTimeInterval(-60))
        #expect(removed == 1)
        #expect(Set(try await blobs.list().map(\.key.sha256)) == [writeSHA])
    }
}
