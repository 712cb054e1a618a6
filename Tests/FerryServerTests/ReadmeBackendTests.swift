import FerryTestSupport
import Foundation
import Testing

/// The README's "Your backend" section, run as written with bash: the built
/// `ferry-server` on the PATH, ports the kernel found free so it never
/// meets a server of yours or a neighbouring test's, and the server and
/// receiver stopped whatever happens.
@Suite struct ReadmeBackendTests {
    @Test func theBackendSectionWorksAsWritten() throws {
        let ports = try ReadmeScript.freePorts(3)
        let (status, text) = try ReadmeScript.run(try ReadmeScript.block("backend"), ports: ["8092": ports[0], "8093": ports[1], "8094": ports[2]])
        #expect(status == 0, "\(text)")
        #expect(text.contains(#""status":"applied""#), "the backend's write: \(text)")
        #expect(text.contains(#""rowID":"hello","table":"note","values":{"title":"Welcome, Carol"}"#), "carol's pull, signed in by the provider: \(text)")
        #expect(text.contains(#""clientID":"server:welcome:carol-welcome""#), "the change feed: \(text)")
        #expect(text.contains("webhook: signed user:carol note hello"), "\(text)")
    }

    /// A README script that fails shows the logs it wrote, after what it printed.
    @Test func aFailingScriptShowsItsLogs() throws {
        let (status, text) = try ReadmeScript.run(
            [#"cd "$(mktemp -d)""#, "echo printed", "echo 'bind: address in use' > server.log", "exit 3"], ports: [:])
        #expect(status == 3)
        #expect(text.hasPrefix("printed\n") && text.contains("--- server.log ---\nbind: address in use"), "\(text)")
        #expect(Set(try ReadmeScript.freePorts(3)).count == 3)
    }
}
