import FerryProtocol
import Testing

/// Every client builds its addresses from `SyncEndpoint`: each parameter is
/// one path segment, whatever it holds.
@Suite struct SyncEndpointTests {
    @Test func parametersAreEncodedAsOneSegmentEach() {
        let member = SyncEndpoint.member(scope: "nb-1@alice", user: "bob smith/../x?y#z")
        #expect(member.method == .put)
        #expect(member.template == "/v1/scopes/{scope}/members/{user}")
        #expect(member.path == "/v1/scopes/nb-1%40alice/members/bob%20smith%2F..%2Fx%3Fy%23z")

        let row = SyncEndpoint.row(scope: "user:alice", table: "note", rowID: "a+b%c")
        #expect(row.path == "/v1/rows/user%3Aalice/note/a%2Bb%25c")

        let blob = SyncEndpoint.blob(.head, scope: "team:x", sha256: "ab12")
        #expect(blob.description == "HEAD /v1/blobs/{scope}/{sha256}")
        #expect(blob.path == "/v1/blobs/team%3Ax/ab12")
    }

    @Test func nonASCIIIsEncodedAsUTF8() {
        #expect(SyncEndpoint.row(scope: "s", table: "t", rowID: "é✓").path == "/v1/rows/s/t/%C3%A9%E2%9C%93")
    }

    @Test func liveNamesEveryScopeInTheQuery() {
        #expect(
            SyncEndpoint.live(scopes: ["user:alice", "team:a&b=c"]).path
                == "/v1/live?scope=user%3Aalice&scope=team%3Aa%26b%3Dc&rows=true")
        #expect(SyncEndpoint.live(scopes: ["s"], rows: false).path == "/v1/live?scope=s")
    }

    @Test func aBaseWithOrWithoutSlashesGivesOneAddress() {
        for base in ["https://sync.example.com", "https://sync.example.com/", "https://sync.example.com//"] {
            #expect(SyncEndpoint.push.url(base: base) == "https://sync.example.com/v1/push")
        }
        #expect(SyncEndpoint.pull.url(base: "http://h/prefix/") == "http://h/prefix/v1/pull")
    }
}
