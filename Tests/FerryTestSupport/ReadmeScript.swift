import Foundation

#if canImport(Glibc)
    import Glibc
    private let streamSocket = Int32(SOCK_STREAM.rawValue)
#else
    import Darwin
    private let streamSocket = SOCK_STREAM
#endif

/// A bash block of README.md, run as written: the one place the README
/// tests read it, start it and clean up after it.
///
/// ```swift
/// let lines = try ReadmeScript.block("tour")             // between <!-- tour --> and <!-- end of tour -->
/// let (status, output) = try ReadmeScript.run(lines, ports: ["8091": try ReadmeScript.freePorts(1)[0]])
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
    /// - Returns: the exit status and everything the script printed; when
    ///   it failed, each `*.log` file it wrote after that (a server's log
    ///   says why it did not answer).
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
        var text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        if process.terminationStatus != 0, let files = FileManager.default.enumerator(at: scratch.url, includingPropertiesForKeys: nil) {
            for case let file as URL in files where file.pathExtension == "log" {
                text += "\n--- \(file.lastPathComponent) ---\n" + ((try? String(contentsOf: file, encoding: .utf8)) ?? "(unreadable)")
            }
        }
        return (process.terminationStatus, text)
    }

    /// `count` distinct loopback ports the kernel gave out just now and took
    /// back: free when asked, where a random guess may fall on one a test
    /// beside this one listens on or connects from.
    public static func freePorts(_ count: Int) throws -> [Int] {
        var sockets: [Int32] = []
        defer { for socket in sockets { close(socket) } }
        return try (0..<count).map { _ in
            let handle = socket(AF_INET, streamSocket, 0)
            guard handle >= 0 else { throw CocoaError(.featureUnsupported, userInfo: [NSLocalizedDescriptionKey: "socket() failed: \(errno)"]) }
            sockets.append(handle)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(handle, $0, length) == 0 && getsockname(handle, $0, &length) == 0 }
            }
            guard named else { throw CocoaError(.featureUnsupported, userInfo: [NSLocalizedDescriptionKey: "bind() failed: \(errno)"]) }
            return Int(UInt16(bigEndian: address.sin_port))
        }
    }
}
