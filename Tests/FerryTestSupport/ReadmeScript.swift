import Foundation

/// A bash block of README.md, run as written: the one place the README
/// tests read it, start it and clean up after it.
///
/// ```swift
/// let lines = try ReadmeScript.block("tour")             // between <!-- tour --> and <!-- end of tour -->
/// let (status, output) = try ReadmeScript.run(lines, ports: ["8091": 23456])
/// ```
public enum ReadmeScript {
    /// The lines of the bash block between `<!-- name -->` and `<!-- end of name -->`.
    public static func block(_ name: String) throws -> [String] {
        let readme = try String(
            contentsOf: URL(filePath: #filePath).deletingLastPathComponent().appending(path: "../../README.md").standardized, encoding: .utf8)
        guard let start = readme.range(of: "<!-- \(name) -->\n```bash\n"),
            let end = readme.range(of: "```\n<!-- end of \(name) -->", range: start.upperBound..<readme.endIndex)
        else { throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "README.md has no `\(name)` bash block"]) }
        return readme[start.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// Runs `lines` with `bash -e`: each port the README uses replaced by
    /// the test's, the built binaries first on the PATH, `mktemp` in a
    /// scratch folder removed after. Every process the script starts in the
    /// background (`NAME=$!`) is killed when it exits, however it exits
    /// (SIGKILL: a child of the test process may start with SIGTERM blocked).
    ///
    /// - Returns: the exit status and everything the script printed.
    public static func run(_ lines: [String], ports: [String: Int], environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
        var script = "set -e\n"
        var started: [String] = []
        for var line in lines {
            for (readme, test) in ports { line = line.replacingOccurrences(of: readme, with: String(test)) }
            script += line + "\n"
            if let name = line.split(separator: "=").first, line.hasSuffix("=$!") {
                started.append("$" + name)
                script += "trap 'kill -KILL \(started.joined(separator: " ")) 2>/dev/null || true' EXIT\n"
            }
        }
        let binaries = try ServerProcess.executable().deletingLastPathComponent().path
        let scratch = try TemporaryDirectory()
        let process = Process()
        process.executableURL = URL(filePath: "/bin/bash")
        process.arguments = ["-c", script]
        process.environment = ProcessInfo.processInfo.environment.merging(
            ["PATH": "\(binaries):/usr/bin:/bin:\(ProcessInfo.processInfo.environment["PATH"] ?? "")", "TMPDIR": scratch.url.path]
        ) { $1 }.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }
}
