import Foundation

/// `ferry-server` running as a child process, as a user starts it.
public final class ServerProcess: @unchecked Sendable {
    // @unchecked: `lines` is only touched under `lock`; the rest is set in init.
    public let process = Process()
    private let output = Pipe()
    private let errors = Pipe()
    private let lock = NSLock()
    private var lines: [String] = []
    private var errorLines: [String] = []

    /// Starts `ferry-server arguments…`; with `launcher` (such as
    /// `["/usr/bin/prlimit", "--nofile=256:256"]`), through it, which
    /// execs the server in its place.
    ///
    /// With `capturingErrors`, what it writes to standard error is kept in
    /// ``printedErrors``; with `executable`, that build of `ferry-server`
    /// runs instead of this one (another version, for an upgrade).
    public init(
        _ arguments: [String], environment: [String: String] = [:], launcher: [String] = [], capturingErrors: Bool = false, executable: URL? = nil
    ) throws {
        let executable = try executable ?? Self.executable()
        if let tool = launcher.first {
            process.executableURL = URL(filePath: tool)
            process.arguments = Array(launcher.dropFirst()) + [executable.path] + arguments
        } else {
            process.executableURL = executable
            process.arguments = arguments
        }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = output
        process.standardError = capturingErrors ? errors : FileHandle.nullDevice
        output.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.withLock { Self.append(data, to: &self.lines) }
        }
        if capturingErrors {
            errors.fileHandleForReading.readabilityHandler = { [weak self] handle in
                let data = handle.availableData
                guard let self, !data.isEmpty else { return }
                self.lock.withLock { Self.append(data, to: &self.errorLines) }
            }
        }
        try process.run()
    }

    public var printed: [String] { lock.withLock { lines } }

    /// What it wrote to standard error, by line (with `capturingErrors`).
    public var printedErrors: [String] { lock.withLock { errorLines } }

    private static func append(_ data: Data, to lines: inout [String]) {
        let text = (lines.popLast() ?? "") + String(decoding: data, as: UTF8.self)
        lines += text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// Stops the server as an operator would (SIGTERM), kills it if it is
    /// still running after `grace`, and waits for it to be gone.
    public func stop(grace: Duration = .seconds(15)) {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = ContinuousClock.now + grace
        while process.isRunning, ContinuousClock.now < deadline { usleep(20_000) }
        kill()
    }

    /// Kills the server (SIGKILL) and waits for it to be gone.
    public func kill() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        output.fileHandleForReading.readabilityHandler = nil
        errors.fileHandleForReading.readabilityHandler = nil
    }

    /// A test that forgot to stop its server, or failed before it could,
    /// never leaves it running.
    deinit {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        if process.processIdentifier != 0 { process.waitUntilExit() }
        output.fileHandleForReading.readabilityHandler = nil
        errors.fileHandleForReading.readabilityHandler = nil
    }

    /// Waits (polling, bounded) for a printed line with `prefix`.
    public func waitForLine(startingWith prefix: String, timeout: Duration = .seconds(30)) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = printed.first(where: { $0.hasPrefix(prefix) }) { return line }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw Timeout(waitingFor: prefix, printed: printed)
    }

    /// Runs the executable to completion and returns what it printed; one
    /// still running after `timeout` (a server that should have refused to
    /// start) is killed.
    public static func run(
        _ arguments: [String], environment: [String: String] = [:], timeout: Duration = .seconds(120), executable: URL? = nil
    ) throws -> (status: Int32, output: String) {
        let process = Process()
        let pipe = Pipe()
        process.executableURL = try executable ?? Self.executable()
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let pid = process.processIdentifier
        let killer = DispatchWorkItem { Foundation.kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout.timeInterval, execute: killer)
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        killer.cancel()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// A token for `user` from `ferry-server token`, minted as an operator
    /// mints one: with `secret`, and in `dataDirectory` when one is given.
    public static func token(for user: String, secret: String, dataDirectory: String? = nil, lifetime: String? = nil) throws -> String {
        let result = try run(
            ["token", "--user", user, "--jwt-secret", secret] + (dataDirectory.map { ["--data-dir", $0] } ?? [])
                + (lifetime.map { ["--ttl", $0] } ?? []))
        let token = result.output.split(separator: "\n").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard result.status == 0, !token.isEmpty else { throw MintFailed(status: result.status, output: result.output) }
        return token
    }

    public struct MintFailed: Error, CustomStringConvertible {
        var status: Int32
        var output: String
        public var description: String { "ferry-server token exited \(status): \(output)" }
    }

    public struct Timeout: Error, CustomStringConvertible {
        var waitingFor: String
        var printed: [String]
        public var description: String { "no line starting with \(waitingFor) in \(printed)" }
    }

    /// Built next to the test bundle, because the test target depends on it.
    public static func executable() throws -> URL {
        var candidates = [URL(filePath: CommandLine.arguments[0]).deletingLastPathComponent()]
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent())
        }
        for directory in candidates {
            let url = directory.appending(path: "ferry-server")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw Timeout(waitingFor: "ferry-server executable", printed: candidates.map(\.path))
    }
}

extension Duration {
    fileprivate var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
