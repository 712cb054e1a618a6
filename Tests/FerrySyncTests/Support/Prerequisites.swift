import Foundation
import FerryTestSupport

/// What a test needs from the machine beyond Swift, probed once. A test
/// whose prerequisite is missing is reported as skipped with the reason
/// (never passed, never failed), except under `CI=true`, where it runs and
/// fails: CI installs everything.
///
/// ```swift
/// @Suite(.enabled(if: Prerequisites.runs(Prerequisites.mounts), "needs root to mount a tmpfs"))
/// ```
enum Prerequisites {
    /// Why network namespaces joined by a lossy link cannot be made here, or
    /// `nil`: root, `ip` (iproute2), and `tc netem` or `iptables`.
    static let lossyLink: String? = {
        let namespace = "ferry-probe\(getpid())"
        guard Shell.status("ip netns add \(namespace)") == 0 else {
            return "network namespaces cannot be made here (needs root and `ip` from iproute2)"
        }
        defer { Shell.status("ip netns del \(namespace)") }
        if Shell.status("ip netns exec \(namespace) tc qdisc add dev lo root netem loss 1%") == 0 { return nil }
        if Shell.status("command -v iptables") == 0 { return nil }
        return "the kernel has no netem and `iptables` is not installed (apt-get install iptables)"
    }()

    /// Why nginx cannot run here, or `nil` (apt-get install nginx).
    static let nginx: String? = Shell.status("command -v nginx") == 0 ? nil : "nginx is not installed (apt-get install nginx)"

    /// Why a tmpfs cannot be mounted here, or `nil`.
    static let mounts: String? = {
        guard let directory = try? TemporaryDirectory() else { return "no temporary directory" }
        guard Shell.status("mount -t tmpfs -o size=65536 ferry-probe-disk '\(directory.url.path)'") == 0 else {
            return "mounting a tmpfs is not permitted here (needs root)"
        }
        Shell.status("umount '\(directory.url.path)'")
        return nil
    }()

    /// Whether a test needing something `missing` names runs: when nothing
    /// is missing, and always under `CI=true`. Says why when it does not.
    static func runs(_ missing: String?) -> Bool {
        guard let missing else { return true }
        if ProcessInfo.processInfo.environment["CI"] == "true" { return true }
        print("skipped: \(missing)")
        return false
    }
}
