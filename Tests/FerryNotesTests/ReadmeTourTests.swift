import FerryTestSupport
import Foundation
import Testing

/// The README's two-minute tour, run as written with bash: the built
/// `ferry-server` and `ferry-notes` on the PATH (its `swift build` and
/// `export PATH` lines are what this test does itself), a port the kernel
/// found free so it never meets a server of yours or a test's, and the
/// server stopped whatever happens.
@Suite struct ReadmeTourTests {
    @Test func theTourWorksAsWritten() throws {
        var lines = try ReadmeScript.block("tour")
        #expect(lines.first?.hasPrefix("swift build") == true && lines.dropFirst().first?.hasPrefix("export PATH") == true)
        lines.removeFirst(2)
        let (status, text) = try ReadmeScript.run(lines, ports: ["8091": try ReadmeScript.freePorts(1)[0]], environment: ["COLUMNS": "100"])
        #expect(status == 0, "\(text)")
        #expect(text.contains("conflict ") && text.contains(": note "), "\(text)")
        #expect(text.contains("-milk, bread") && text.contains("+milk, oat milk"), "\(text)")
        #expect(text.contains("\nmilk, bread"), "the resolution reached the phone: \(text)")
        #expect(text.contains("Packing"), "\(text)")
    }
}
