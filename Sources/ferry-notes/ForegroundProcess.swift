import FerryNotes
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child that uses the terminal (an editor, a pager): started in this
/// process's group, so it holds the terminal as the foreground job
/// (Foundation's `Process` starts a group of its own, and a terminal stops
/// a background job that reads it, or it cannot open `/dev/tty` at all),
/// with Ctrl-C and Ctrl-\ at their defaults in it.
enum ForegroundProcess {
    /// Starts `arguments` (an absolute path first), its standard input read
    /// from `standardInput` when given, in `environment` (else this one's).
    static func spawn(_ arguments: [String], standardInput: Int32? = nil, environment: [String: String]? = nil) throws -> pid_t {
        #if canImport(Darwin)
            var attributes: posix_spawnattr_t? = nil
            var actions: posix_spawn_file_actions_t? = nil
        #else
            var attributes = posix_spawnattr_t()
            var actions = posix_spawn_file_actions_t()
        #endif
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGQUIT)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
        if let standardInput {
            posix_spawn_file_actions_adddup2(&actions, standardInput, STDIN_FILENO)
            posix_spawn_file_actions_addclose(&actions, standardInput)
        }
        var cArguments = arguments.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var cEnvironment = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { cEnvironment.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, arguments[0], &actions, &attributes, &cArguments, &cEnvironment)
        guard spawned == 0 else {
            throw NotesError(.failure, "cannot start \(arguments.last ?? arguments[0]): \(String(cString: strerror(spawned)))")
        }
        return pid
    }

    /// Waits for `pid` to end; its exit status, or 128 + the signal that ended it.
    static func wait(_ pid: pid_t) throws -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { throw NotesError(.failure, "lost a child process: \(String(cString: strerror(errno)))") }
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import as macros.
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }
}
