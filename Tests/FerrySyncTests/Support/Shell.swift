import Foundation

/// Commands for the tests that set up real faults (network namespaces, a
/// small disk), run by `/bin/sh` with their output discarded.
enum Shell {
    struct Failed: Error, CustomStringConvertible {
        var command: String
        var description: String { "`\(command)` failed" }
    }

    /// Runs `command`, throwing unless it exits 0.
    static func run(_ command: String) throws {
        guard status(command) == 0 else { throw Failed(command: command) }
    }

    /// Runs `command` and returns its exit status (-1 if it could not start).
    @discardableResult
    static func status(_ command: String) -> Int32 {
        let process = Process()
        process.executableURL = URL(filePath: "/bin/sh")
        process.arguments = ["-c", "{ " + command + "\n} >/dev/null 2>&1"]
        do { try process.run() } catch { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
