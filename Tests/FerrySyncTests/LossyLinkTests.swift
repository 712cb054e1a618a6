import Ferry
import FerryTestSupport
import Foundation
import GRDB
import Testing

/// Device and server in separate processes and separate network namespaces,
/// joined by a veth pair that loses packets (and, where the kernel has
/// `netem`, delays and reorders them), and is cut for a while and restored:
/// every change a device committed reaches the server, and a second device
/// that syncs through the same link ends with exactly the same rows.
///
/// Needs root and `ip` (iproute2); `tc netem` where the kernel has it, else
/// `iptables` for the loss. Where namespaces are not permitted the test says
/// so and skips, except under `CI=true`, where it fails.
@Suite(.serialized, .enabled(if: Prerequisites.runs(Prerequisites.lossyLink), "needs root, ip (iproute2), and tc netem or iptables"))
struct LossyLinkTests {
    static let secret = "lossy-link-secret-0123456789abcdef-0123"

    @Test func changesCrossALossyLinkThatIsCutAndRestored() async throws {
        guard let link = try LossyLink.make() else { return }
        defer { link.remove() }
        let directory = try TemporaryDirectory()
        let server = try ServerProcess(
            [
                "serve", "--host", LossyLink.serverAddress, "--port", "8080", "--jwt-secret", Self.secret,
                "--data-dir", directory.path("server"),
            ],
            launcher: link.inServer)
        defer { server.stop() }
        let line = try await server.waitForLine(startingWith: "Ferry server listening on ")
        let url = String(line.dropFirst("Ferry server listening on ".count))
        let token = try ServerProcess.token(for: "alice", secret: Self.secret, dataDirectory: directory.path("tokens"))
        let first = directory.path("first.sqlite"), second = directory.path("second.sqlite")
        var committed = Set<String>()
        var changes = 0

        // Writes and syncs while the link loses packets.
        for round in 1...4 {
            let run = try link.device(["sync-kill", first, url, token, "alice", "push", "0", "8"])
            committed.formUnion(run.inserts)
            changes += run.lines.count - 1
            #expect(run.status == 0, "round \(round): the sync through the lossy link failed: \(run.lines.suffix(2))")
        }
        // The link is cut: the device keeps writing, its sync fails, nothing is lost.
        try link.cut()
        let offline = try link.device(["sync-kill", first, url, token, "alice", "push", "0", "8"])
        committed.formUnion(offline.inserts)
        changes += offline.lines.count
        #expect(offline.status != 0, "a sync over a cut link succeeded")
        try link.restore()
        let healed = try link.device(["sync-kill", first, url, token, "alice", "push", "0", "0"])
        #expect(healed.status == 0, "the sync after the link came back failed: \(healed.lines.suffix(2))")
        // A second device pulls everything through the same lossy link.
        let pulled = try link.device(["sync-kill", second, url, token, "alice", "pull", "0", "0"])
        #expect(pulled.status == 0, "the second device's sync failed: \(pulled.lines.suffix(2))")

        let one = try Self.items(first), two = try Self.items(second)
        #expect(committed.isSubset(of: one.keys), "the writing device lost a committed change")
        #expect(one == two, "the devices differ: \(one.count) rows and \(two.count)")
        #expect(changes == 40, "the device committed \(changes) changes, not 40")
        print("lossy link (\(link.faults)): \(changes) changes (\(committed.count) inserts) crossed, \(one.count) rows on both devices")
    }

    static func items(_ path: String) throws -> [String: Int] {
        let database = try FerryDatabase(path: path, schema: ItemSchema.schema)
        defer { try? database.close() }
        #expect(try database.outbox.pendingCount() == 0, "\(path) has changes left to send")
        return try database.read(ItemSchema.revisions)
    }
}

/// Two network namespaces joined by a veth pair, with packet loss on both
/// ends; removed with ``remove()``.
struct LossyLink {
    static let serverAddress = "10.231.0.1"
    static let deviceAddress = "10.231.0.2"

    let serverNamespace: String
    let deviceNamespace: String
    /// What the link does to packets, as set up.
    let faults: String

    var inServer: [String] { ["/usr/bin/env", "ip", "netns", "exec", serverNamespace] }
    var inDevice: [String] { ["/usr/bin/env", "ip", "netns", "exec", deviceNamespace] }

    /// The link, or `nil` (having said why) where this machine does not
    /// permit network namespaces; under `CI=true` that fails the test.
    static func make() throws -> LossyLink? {
        let suffix = "\(getpid())"
        let server = "ferry-s\(suffix)", device = "ferry-d\(suffix)"
        // What an earlier run that died left behind: namespaces of processes gone.
        Shell.status(
            """
            for ns in $(ip netns list | awk '{print $1}' | grep -E '^ferry-[sd][0-9]+$'); do
                pid=${ns#ferry-?}; [ -d /proc/$pid ] && continue
                ip netns pids "$ns" | xargs -r kill -9; ip netns del "$ns"
            done
            """)
        guard Shell.status("ip netns add \(server)") == 0 else {
            let reason = "network namespaces are not permitted here (`ip netns add` failed): the lossy-link test is skipped"
            if ProcessInfo.processInfo.environment["CI"] == "true" { Issue.record(Comment(rawValue: reason)) } else { print(reason) }
            return nil
        }
        var link = LossyLink(serverNamespace: server, deviceNamespace: device, faults: "")
        do {
            try Shell.run("ip netns add \(device)")
            try Shell.run("ip link add vs\(suffix) netns \(server) type veth peer name vd\(suffix) netns \(device)")
            try Shell.run("ip -n \(server) addr add \(serverAddress)/24 dev vs\(suffix)")
            try Shell.run("ip -n \(device) addr add \(deviceAddress)/24 dev vd\(suffix)")
            for (namespace, interface) in [(server, "vs\(suffix)"), (device, "vd\(suffix)")] {
                try Shell.run("ip -n \(namespace) link set lo up")
                try Shell.run("ip -n \(namespace) link set \(interface) up")
            }
            // netem where the kernel has it; else loss alone, by iptables.
            let netem = "netem loss 10% delay 20ms 10ms reorder 25% 50%"
            if Shell.status("ip netns exec \(server) tc qdisc add dev vs\(suffix) root \(netem)") == 0,
                Shell.status("ip netns exec \(device) tc qdisc add dev vd\(suffix) root \(netem)") == 0
            {
                link = LossyLink(serverNamespace: server, deviceNamespace: device, faults: "tc \(netem), both ways")
            } else {
                for (namespace, interface) in [(server, "vs\(suffix)"), (device, "vd\(suffix)")] {
                    try Shell.run("ip netns exec \(namespace) iptables -A INPUT -i \(interface) -m statistic --mode random --probability 0.10 -j DROP")
                }
                link = LossyLink(
                    serverNamespace: server, deviceNamespace: device,
                    faults: "10% of packets dropped both ways by iptables (this kernel has no netem: no delay or reordering)")
            }
        } catch {
            link.remove()
            throw error
        }
        return link
    }

    /// Runs `ferry-test-worker` in the device's namespace to its end.
    func device(_ arguments: [String]) throws -> (status: Int32, lines: [String], inserts: [String]) {
        let worker = try WorkerProcess(arguments, launcher: inDevice)
        guard worker.wait(atMost: .seconds(180)) else {
            throw Shell.Failed(command: "ferry-test-worker \(arguments.joined(separator: " ")) (still running after 180 s)")
        }
        let lines = worker.readRemainingLines()
        let inserts = lines.filter { $0.hasPrefix("insert ") }.map { String($0.dropFirst("insert ".count)) }
        return (worker.process.terminationStatus, lines, inserts)
    }

    func cut() throws { try Shell.run("ip -n \(deviceNamespace) link set vd\(deviceNamespace.dropFirst("ferry-d".count)) down") }

    func restore() throws { try Shell.run("ip -n \(deviceNamespace) link set vd\(deviceNamespace.dropFirst("ferry-d".count)) up") }

    /// Deletes both namespaces (and with them the veth pair).
    func remove() {
        for namespace in [deviceNamespace, serverNamespace] {
            Shell.status("ip netns pids \(namespace) | xargs -r kill -9; ip netns del \(namespace)")
        }
    }
}
