import ArgumentParser
import FerryServer
import Foundation

struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy the embedded store to a new file while the server runs (consistent; writes go on)."
    )

    @OptionGroup var options: ServerOptions

    @Option(help: "The backup file to write (must not exist).")
    var to: String

    func run() async throws {
        let settings = try await options.settings(keys: ServerOptions.storeKeys)
        do {
            let report = try SQLiteSyncStore.backup(directory: settings.dataDirectory, to: URL(filePath: to))
            print("backed up the store of \(settings.dataDir) at version \(report.version) to \(to) (\(report.bytes) bytes)")
        } catch let error as FerryServerError {
            throw ValidationError(error.message)
        }
    }
}

struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Put a backup in place of the embedded store; the server must be stopped. Devices send back what the backup lacks."
    )

    @OptionGroup var options: ServerOptions

    @Option(help: "The backup file, as `ferry-server backup` wrote it.")
    var from: String

    func run() async throws {
        // Held while the store is replaced: a server started meanwhile refuses to start, and one running refuses this.
        let settings = try await options.settings(keys: ServerOptions.storeKeys)
        let lock = try DataDirectoryLock.acquire(settings.dataDirectory)
        do {
            let report = try SQLiteSyncStore.restore(directory: settings.dataDirectory, from: URL(filePath: from))
            print(
                """
                restored the store of \(settings.dataDir) from \(from) (version \(report.version)); \
                devices that synced past it send back what it lacks at their next sync
                """)
        } catch let error as FerryServerError {
            throw ValidationError(error.message)
        }
        _ = consume lock
    }
}
