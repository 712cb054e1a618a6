import Foundation

/// `ferry-test-worker` running as a child process, its stdout read line by line.
public final class WorkerProcess: @unchecked Sendable {
    // @unchecked: after init, only one thread reads the pipe at a time (the test, or the drain thread).
    public let process = Process()
    private let output = Pipe()
    private var buffer = Data()
    private var finished = false

    /// Starts `ferry-test-worker arguments…`; with `launcher` (such as
    /// `["/usr/sbin/ip", "netns", "exec", name]`), through it, which execs
    /// the worker in its place.
    public init(_ arguments: [String], launcher: [String] = []) throws {
        if let tool = launcher.first {
            process.executableURL = URL(filePath: tool)
            process.arguments = Array(launcher.dropFirst()) + [try Self.executable().path] + arguments
        } else {
            process.executableURL = try Self.executable()
            process.arguments = arguments
        }
        process.standardOutput = output
        try process.run()
    }

    /// The next line the worker printed, or nil once it exited and all output is read.
    public func readLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            if finished { return nil }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty {
                finished = true
                if buffer.isEmpty { return nil }
                let line = String(decoding: buffer, as: UTF8.self)
                buffer.removeAll()
                return line
            }
            buffer.append(chunk)
        }
    }

    /// Every remaining line, until the worker's stdout closes.
    public func readRemainingLines() -> [String] {
        var lines: [String] = []
        while let line = readLine() { lines.append(line) }
        return lines
    }

    /// Reads every line on a background thread until the worker's stdout
    /// closes, so a chatty worker never blocks on a full pipe.
    public func drainInBackground() -> @Sendable () -> [String] {
        let lines = LinesBox()
        let done = DispatchSemaphore(value: 0)
        let reader = Thread { [self] in
            lines.lines = readRemainingLines()
            done.signal()
        }
        reader.start()
        return {
            done.wait()
            return lines.lines
        }
    }

    /// Kills it with SIGKILL and waits for it.
    public func kill() {
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// A test that failed before it reaped its worker never leaves it running.
    deinit {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        if process.processIdentifier != 0 { process.waitUntilExit() }
    }

    /// Built next to the test bundle, because the test target depends on it.
    static func executable() throws -> URL {
        var candidates: [URL] = []
        candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent())
        }
        for directory in candidates {
            let url = directory.appendingPathComponent("ferry-test-worker")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw WorkerNotFound(searched: candidates.map(\.path))
    }

    /// Waits for it to end on its own (or by a signal it sent itself).
    public func wait() {
        process.waitUntilExit()
    }

    /// Waits up to `limit` for it to end on its own, then kills it; returns
    /// whether it ended on its own.
    @discardableResult
    public func wait(atMost limit: Duration) -> Bool {
        let deadline = ContinuousClock.now + limit
        while process.isRunning, ContinuousClock.now < deadline { usleep(10_000) }
        guard process.isRunning else {
            process.waitUntilExit()
            return true
        }
        kill()
        return false
    }

    struct WorkerNotFound: Error, CustomStringConvertible {
        var searched: [String]
        var description: String { "ferry-test-worker not found in \(searched); run `swift build --build-tests`" }
    }
}

/// The lines a drain thread read; the semaphore orders its one write before the read.
private final class LinesBox: @unchecked Sendable {
    var lines: [String] = []
}
