import FerryTestSupport
import Foundation
import Testing

/// The README's "Your backend" section, run as written with bash: the built
/// `ferry-server` on the PATH, other ports so it never meets a server of
/// yours, and the server and receiver stopped whatever happens.
@Suite struct ReadmeBackendTests {
    @Test func theBackendSectionWorksAsWritten() throws {
        let base = Int.random(in: 20_000..<40_000)
        let (status, text) = try ReadmeScript.run(try ReadmeScript.block("backend"), ports: ["8092": base, "8093": base + 1, "8094": base + 2])
        #expect(status == 0, "\(text)")
        #expect(text.contains(#""status":"applied""#), "the backend's write: \(text)")
        #expect(text.contains(#""rowID":"hello","table":"note","values":{"title":"Welcome, Carol"}"#), "carol's pull, signed in by the provider: \(text)")
        #expect(text.contains(#""clientID":"server:welcome:carol-welcome""#), "the change feed: \(text)")
        #expect(text.contains("webhook: signed user:carol note hello"), "\(text)")
    }
}
