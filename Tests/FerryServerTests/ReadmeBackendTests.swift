import FerryTestSupport
import Foundation
import Testing

/// The README's "Your backend" section, run as written with bash: the built
/// `ferry-server` on the PATH, other ports so it never meets a server of
/// yours, and the server and receiver stopped whatever happens.
@Suite struct ReadmeBackendTests {
    @Test func theBackendSectionWorksAsWritten() throws {
        let readme = try String(
            contentsOf: URL(filePath: #filePath).deletingLastPathComponent().appending(path: "../../README.md").standardized, encoding: .utf8)
        let start = try #require(readme.range(of: "<!-- backend -->\n```bash\n"))
        let end = try #require(readme.range(of: "```\n<!-- end of backend -->", range: start.upperBound..<readme.endIndex))
        let base = Int.random(in: 20_000..<40_000)
        var script = "set -e\n"
        for line in readme[start.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false) {
            var line = String(line)
            for (index, port) in ["8092", "8093", "8094"].enumerated() {
                line = line.replacingOccurrences(of: port, with: String(base + index))
            }
            script += line + "\n"
            // SIGKILL for the receiver: a child of the test process may start with SIGTERM blocked, which Python keeps.
            if line.hasPrefix("RECEIVER=$!") { script += "trap 'kill -KILL $RECEIVER 2>/dev/null || true' EXIT\n" }
            if line.hasPrefix("SERVER=$!") { script += "trap 'kill $SERVER 2>/dev/null; kill -KILL $RECEIVER 2>/dev/null || true' EXIT\n" }
        }
        let binaries = try ServerProcess.executable().deletingLastPathComponent().path
        let scratch = try TemporaryDirectory()
        let process = Process()
        process.executableURL = URL(filePath: "/bin/bash")
        process.arguments = ["-c", script]
        process.environment = ProcessInfo.processInfo.environment.merging(["PATH": "\(binaries):/usr/bin:/bin:\(ProcessInfo.processInfo.environment["PATH"] ?? "")", "TMPDIR": scratch.url.path]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains(#""status":"applied""#), "the backend's write: \(text)")
        #expect(text.contains(#""rowID":"hello","table":"note","values":{"title":"Welcome, Carol"}"#), "carol's pull, signed in by the provider: \(text)")
        #expect(text.contains(#""clientID":"server:welcome:carol-welcome""#), "the change feed: \(text)")
        #expect(text.contains("webhook: signed user:carol note hello"), "\(text)")
    }
}
