import CompressNIO
import FerryProtocol
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import FerryServer

/// Compressed bodies both ways: the codings chosen from `Accept-Encoding`,
/// pushes sent gzipped or deflated, pulls answered compressed only when
/// asked and only when worth it, and bombs refused with 413.
@Suite struct ContentCodingTests {
    @Test func theCodingFollowsTheWeights() throws {
        #expect(ContentCoding.preferred(acceptEncoding: nil) == nil)
        #expect(ContentCoding.preferred(acceptEncoding: "gzip") == .gzip)
        #expect(ContentCoding.preferred(acceptEncoding: "gzip, deflate, br") == .gzip)
        #expect(ContentCoding.preferred(acceptEncoding: "gzip;q=0.5, deflate") == .deflate)
        #expect(ContentCoding.preferred(acceptEncoding: "gzip;q=0, deflate;q=0") == nil)
        #expect(ContentCoding.preferred(acceptEncoding: "br, identity") == nil)
        #expect(ContentCoding.preferred(acceptEncoding: "*") == .gzip)
        #expect(ContentCoding.preferred(acceptEncoding: "*;q=0.1, gzip;q=0") == .deflate)
        #expect(ContentCoding.preferred(acceptEncoding: "X-GZIP") == .gzip)
        #expect(ContentCoding.preferred(acceptEncoding: "\tgzip ;q=0.2 ,  deflate\t; q=0.9 ") == .deflate, "spaces and tabs around each part")
        #expect(ContentCoding.preferred(acceptEncoding: " , \t") == nil)
        #expect(try ContentCoding(header: " deflate\t") == .deflate)
        #expect(throws: Never.self) { try Request.requireJSONContentType(" Application/JSON\t; charset=utf-8") }
        #expect(throws: FerryServerError.self) { try Request.requireJSONContentType("application/json\u{A0}") }
        #expect(try ContentCoding(header: nil) == nil)
        #expect(try ContentCoding(header: "identity") == nil)
        #expect(try ContentCoding(header: "GZIP") == .gzip)
        #expect(throws: FerryServerError.self) { try ContentCoding(header: "br") }
        #expect(throws: FerryServerError.self) { try ContentCoding(header: "gzip, gzip") }
    }

    @Test func aBombIsRefusedByRatioAndBySize() throws {
        let zeros = ByteBuffer(repeating: 0, count: 4 << 20)
        let bomb = try ContentCoding.gzip.compress(zeros)
        #expect(bomb.readableBytes < 8 << 10, "4 MiB of zeros gzip to \(bomb.readableBytes) bytes")
        // Within the size limit, but far past the ratio.
        #expect { try ContentCoding.gzip.decompress(bomb, limit: 64 << 20) } throws: { ($0 as? FerryServerError)?.code == .payloadTooLarge }
        // Ordinary JSON, well inside both.
        let json = ByteBuffer(string: (0..<2_000).map { #"{"table":"note","rowID":"r-\#($0)","columns":{"title":"note \#($0 * 7919 % 10007)"}}"# }.joined(separator: ","))
        let packed = try ContentCoding.deflate.compress(json)
        #expect(try ContentCoding.deflate.decompress(packed, limit: 1 << 20) == json)
        // Past the size limit.
        #expect { try ContentCoding.deflate.decompress(packed, limit: 1 << 10) } throws: { ($0 as? FerryServerError)?.code == .payloadTooLarge }
        #expect { try ContentCoding.gzip.decompress(ByteBuffer(string: "not gzip at all"), limit: 1 << 20) } throws: {
            ($0 as? FerryServerError)?.code == .badRequest
        }
    }

    /// Through the router: a gzipped push is applied; the pull that reads
    /// it back comes gzipped when asked and plain when not, the same rows
    /// either way; a bomb and an unknown coding are refused.
    @Test func pushesAndPullsCompressedThroughTheRouter() async throws {
        let server = try await TestServer()
        let token = try await server.token("alice")
        try await server.withClient { client in
            let mutations = (1...200).map { Mutations.upsert(Int64($0), row: "r\($0)", ["title": .text("note number \($0) with some words")]) }
            let push = ByteBuffer(bytes: try JSONEncoder().encode(PushRequest(clientID: "gz", mutations: mutations)))
            var headers: HTTPFields = [.contentType: "application/json", .authorization: "Bearer \(token)", .contentEncoding: "gzip"]
            let pushed = try await client.execute(uri: "/v1/push", method: .post, headers: headers, body: try ContentCoding.gzip.compress(push))
            #expect(pushed.status == .ok, "\(String(buffer: pushed.body))")
            #expect(try JSONDecoder().decode(PushResponse.self, from: Data(pushed.body.readableBytesView)).results.count == 200)

            let pull = ByteBuffer(bytes: try JSONEncoder().encode(PullRequest(clientID: "gz", scopes: [.init(scope: "user:alice")])))
            headers = [.contentType: "application/json", .authorization: "Bearer \(token)", .acceptEncoding: "gzip"]
            let compressed = try await client.execute(uri: "/v1/pull", method: .post, headers: headers, body: pull)
            #expect(compressed.headers[.contentEncoding] == "gzip" && compressed.headers[.vary]?.contains("Accept-Encoding") == true)
            var zipped = compressed.body
            let unzipped = try zipped.decompress(with: .gzip())
            headers[.acceptEncoding] = nil
            let plain = try await client.execute(uri: "/v1/pull", method: .post, headers: headers, body: pull)
            #expect(plain.headers[.contentEncoding] == nil)
            #expect(compressed.body.readableBytes * 4 < plain.body.readableBytes, "\(compressed.body.readableBytes) vs \(plain.body.readableBytes)")
            let rows = { (body: ByteBuffer) in
                try JSONDecoder().decode(PullResponse.self, from: Data(body.readableBytesView)).pages[0].changes.map(\.rowID).sorted()
            }
            #expect(try rows(unzipped) == rows(plain.body) && rows(plain.body).count == 200)

            // A small answer goes as it is, even when asked.
            let scopes = try await client.execute(
                uri: "/v1/scopes", method: .get, headers: [.authorization: "Bearer \(token)", .acceptEncoding: "gzip"])
            #expect(scopes.status == .ok && scopes.headers[.contentEncoding] == nil)

            headers = [.contentType: "application/json", .authorization: "Bearer \(token)", .contentEncoding: "gzip"]
            let bomb = try await client.execute(
                uri: "/v1/push", method: .post, headers: headers, body: try ContentCoding.gzip.compress(ByteBuffer(repeating: 0x20, count: 3 << 20)))
            #expect(bomb.status == .contentTooLarge, "\(String(buffer: bomb.body))")
            headers[.contentEncoding] = "br"
            let unknown = try await client.execute(uri: "/v1/push", method: .post, headers: headers, body: push)
            #expect(unknown.status == .unsupportedMediaType, "\(String(buffer: unknown.body))")
        }
    }
}
