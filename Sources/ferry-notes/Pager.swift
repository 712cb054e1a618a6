import ArgumentParser
import Ferry
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Long output on a terminal goes through a pager, as `git` does: the
/// command in `$FERRY_NOTES_PAGER`, else `$PAGER`, else `less` (with
/// `LESS=FRX` unless set: it exits at once when the output fits one
/// screen, keeps colour, and leaves the text on the screen). Never into a
/// pipe or a file; `--no-pager`, or an empty or `cat` pager, turns it off.
enum Pager {
    private static let running = Locked<(pid: pid_t, command: String)?>(nil)

    /// From here on, standard output goes to the pager (when there is one
    /// to use). The terminal's size and kind are read first, so output is
    /// still laid out for the terminal.
    static func start() {
        guard Terminal.outputWasTerminal else { return }
        _ = (Terminal.terminalSize, Terminal.usesColor)
        var environment = ProcessInfo.processInfo.environment
        let command = (environment["FERRY_NOTES_PAGER"] ?? environment["PAGER"] ?? "less").trimmingCharacters(in: .whitespaces)
        guard !command.isEmpty, command != "cat" else { return }
        if environment["LESS"] == nil { environment["LESS"] = "FRX" }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return }
        // Neither end leaks into the pager but as its standard input: it must see the end of the output.
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let pid: pid_t
        do {
            pid = try ForegroundProcess.spawn(["/bin/sh", "-c", command], standardInput: ends[0], environment: environment)
        } catch {
            close(ends[0])
            close(ends[1])
            return
        }
        close(ends[0])
        fflush(nil)
        dup2(ends[1], STDOUT_FILENO)
        close(ends[1])
        // A pager that quits early (`q` in less) is no error of ours (see `writeOut`).
        signal(SIGPIPE, SIG_IGN)
        // Ctrl-C is the pager's: this process waits for it, as git does, so the shell never takes the terminal back from it.
        signal(SIGINT, SIG_IGN)
        signal(SIGQUIT, SIG_IGN)
        running.withLock { $0 = (pid, command) }
        atexit { Pager.finish() }
    }

    /// Whether standard output goes to a pager now.
    static var isRunning: Bool { running.withLock { $0 != nil } }

    /// Ends the output and waits for the reader to leave the pager.
    static func finish() {
        guard
            let pager = running.withLock({ value in
                defer { value = nil }; return value
            })
        else { return }
        fflush(nil)
        close(STDOUT_FILENO)
        if (try? ForegroundProcess.wait(pager.pid)) == 127 {
            let message = "ferry-notes: the pager `\(pager.command)` was not found; set PAGER (or FERRY_NOTES_PAGER), or add --no-pager\n"
            try? FileHandle.standardError.write(contentsOf: Data(message.utf8))
        }
    }
}

/// `--no-pager`, on the commands whose output can run long.
struct PagerOptions: ParsableArguments {
    @Flag(name: .customLong("no-pager"), help: "Print straight to the terminal, without $PAGER.")
    var noPager = false

    func start() {
        if !noPager { Pager.start() }
    }
}
