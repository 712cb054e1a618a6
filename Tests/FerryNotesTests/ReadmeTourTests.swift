import FerryTestSupport
import Foundation
import Testing

/// The README's two-minute tour, run as written with bash: the built
/// `ferry-server` and `ferry-notes` on the PATH (its `swift build` and
/// `export PATH` lines are what this test does itself), another port so it
/// never meets a server of yours, and the server stopped whatever happens.
@Suite struct ReadmeTourTests {
    @Test func theTourWorksAsWritten() throws {
        let readme = try String(
            contentsOf: URL(filePath: #filePath).deletingLastPathComponent()
                .appending(path: "../../README.md").standardized, encoding: .utf8)
        let start = try #require(readme.range(of: "<!-- tour -->\n```bash\n"))
        let end = try #require(readme.range(of: "```\n<!-- end of tour -->", range: start.upperBound..<readme.endIndex))
        var lines = readme[start.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first?.hasPrefix("swift build") == true && lines.dropFirst().first?.hasPrefix("export PATH") == true)
        lines.removeFirst(2)
        let port = String(Int.random(in: 20_000..<40_000))
        var script = "set -e\n"
        for line in lines {
            script += line.replacingOccurrences(of: "8091", with: port) + "\n"
            if line.hasPrefix("SERVER=$!") { script += "trap 'kill $SERVER 2>/dev/null || true' EXIT\n" }
        }
        let binaries = try ServerProcess.executable().deletingLastPathComponent().path
        // `mktemp -d` in the tour makes its folder in here, removed after.
        let scratch = try TemporaryDirectory()
        let process = Process()
        process.executableURL = URL(filePath: "/bin/bash")
        process.arguments = ["-c", script]
        process.environment = ProcessInfo.processInfo.environment.merging(["PATH": "\(binaries):/usr/bin:/bin", "COLUMNS": "100", "TMPDIR": scratch.url.path]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains("conflict ") && text.contains(": note "), "\(text)")
        #expect(text.contains("-milk, bread") && text.contains("+milk, oat milk"), "\(text)")
        #expect(text.contains("\nmilk, bread"), "the resolution reached the phone: \(text)")
        #expect(text.contains("Packing"), "\(text)")
    }
}
