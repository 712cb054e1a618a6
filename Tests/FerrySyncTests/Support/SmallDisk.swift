import Foundation
import Testing
import FerryTestSupport
#if canImport(Glibc)
    import Glibc
#endif

/// A real, small filesystem: a tmpfs mounted on a temporary directory, so a
/// write past its size fails with `ENOSPC` exactly as on a full phone or
/// server disk. A filler file takes the space and gives it back.
final class SmallDisk {
    let directory: TemporaryDirectory
    private var filler: URL { directory.url.appending(path: "filler") }

    private init(directory: TemporaryDirectory) {
        self.directory = directory
    }

    /// A tmpfs of `bytes`, or `nil` (having said why) where this machine does
    /// not permit mounting; under `CI=true` that fails the test.
    static func mount(bytes: Int) throws -> SmallDisk? {
        // What an earlier run that died left mounted: disks of processes gone.
        Shell.status(
            """
            awk '$1 ~ /^ferry-small-disk-[0-9]+$/ { print $1, $2 }' /proc/mounts | while read -r name path; do
                [ -d "/proc/${name##*-}" ] || umount -l "$path"
            done
            """)
        let directory = try TemporaryDirectory()
        guard Shell.status("mount -t tmpfs -o size=\(bytes) ferry-small-disk-\(getpid()) '\(directory.url.path)'") == 0 else {
            let reason = "mounting a tmpfs is not permitted here: the real full-disk test is skipped"
            if ProcessInfo.processInfo.environment["CI"] == "true" { Issue.record(Comment(rawValue: reason)) } else { print(reason) }
            return nil
        }
        return SmallDisk(directory: directory)
    }

    /// Bytes still free on the filesystem.
    var freeBytes: Int {
        var stats = statvfs()
        guard statvfs(directory.url.path, &stats) == 0 else { return 0 }
        return Int(stats.f_bavail) * Int(stats.f_frsize)
    }

    /// Takes all but about `leaving` bytes with the filler file.
    func fill(leaving: Int) throws {
        let size = max(0, freeBytes - leaving)
        try Data(count: size).write(to: filler)
    }

    /// Gives the filler's space back: space returns.
    func free() throws {
        try FileManager.default.removeItem(at: filler)
    }

    /// Unmounts (lazily, so a file still open cannot keep it mounted).
    func unmount() {
        if Shell.status("umount -l '\(directory.url.path)'") != 0 {
            Issue.record("could not unmount the small disk at \(directory.url.path)")
        }
    }
}
