import Foundation
import Logging
import UnixSignals

/// Ends the process if it is still running `after` the first SIGTERM or
/// SIGINT (``expire()`` is started then): a graceful shutdown that hangs (a
/// store whose database went away mid-request) never keeps `ferry-server`
/// alive.
struct ShutdownWatchdog {
    let after: Duration
    let logger: Logger

    init(after: Duration, logger: Logger) {
        self.after = after
        self.logger = logger
    }

    /// Waits `after`, then ends the process.
    func expire() async {
        do {
            try await Task.sleep(for: after)
        } catch {
            return
        }
        logger.error("shutdown did not finish in time; exiting", metadata: ["waited": "\(after)"])
        FileHandle.standardError.write(Data("ferry-server: shutdown did not finish within \(after); exiting\n".utf8))
        // `_exit`: no exit handlers run while other threads still work.
        _exit(1)
    }
}
