import Ferry
import Foundation
import Testing
import FerryTestSupport

/// The nginx site of the deployment guide (`Deploying.md`, between its
/// `nginx` markers), run as written in front of the real server: a device
/// pushes through it and another follows the change live through it.
@Suite(.serialized, .enabled(if: Prerequisites.runs(Prerequisites.nginx)))
struct ReverseProxyTests {
    /// The guide's site, pointed at `server` and listening on `port`.
    static func site(server: Int, listen port: Int) throws -> String {
        let guide = try String(
            contentsOf: URL(filePath: #filePath).deletingLastPathComponent()
                .appending(path: "../../Sources/FerryServer/FerryServer.docc/Deploying.md").standardized,
            encoding: .utf8)
        let start = try #require(guide.range(of: "<!-- nginx -->\n```nginx\n"))
        let end = try #require(guide.range(of: "```\n<!-- /nginx -->", range: start.upperBound..<guide.endIndex))
        let site = String(guide[start.upperBound..<end.lowerBound])
        #expect(site.contains("server 127.0.0.1:8080;") && site.contains("listen 8443;"))
        return site.replacingOccurrences(of: "server 127.0.0.1:8080;", with: "server 127.0.0.1:\(server);")
            .replacingOccurrences(of: "listen 8443;", with: "listen 127.0.0.1:\(port);")
    }

    /// nginx in the foreground with the site, its files in `directory`.
    static func nginx(site: String, in directory: TemporaryDirectory) throws -> Process {
        let root = directory.path("nginx")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let configuration = """
            daemon off;
            master_process off;
            user root;
            pid \(root)/nginx.pid;
            error_log \(root)/error.log;
            events {}
            http {
                access_log off;
                client_body_temp_path \(root)/body;
                proxy_temp_path \(root)/proxy;
                fastcgi_temp_path \(root)/fastcgi;
                uwsgi_temp_path \(root)/uwsgi;
                scgi_temp_path \(root)/scgi;
            \(site)
            }
            """
        try configuration.write(toFile: root + "/nginx.conf", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(filePath: "/bin/sh")
        process.arguments = ["-c", "exec nginx -c '\(root)/nginx.conf' -p '\(root)'"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    @Test func aDeviceSyncsAndFollowsLiveThroughTheGuidesProxy() async throws {
        let directory = try TemporaryDirectory()
        let server = try await SyncServer.start()
        try await server.stopping {
            let port = try FreePort.pick()
            let proxy = try Self.nginx(site: try Self.site(server: server.port, listen: port), in: directory)
            defer {
                kill(proxy.processIdentifier, SIGKILL)
                proxy.waitUntilExit()
            }
            let url = try #require(URL(string: "http://127.0.0.1:\(port)"))
            #expect(try await eventually(within: .seconds(10)) { (try? Data(contentsOf: url.appending(path: "livez"))) != nil })
            let fast: (inout SyncConfiguration) -> Void = { $0.debounce = .milliseconds(20) }
            let listening: (inout SyncConfiguration) -> Void = { $0.live = true }
            let a = try await Device.make("a", user: "alice", baseURL: url, directory: directory, configure: fast, token: try await server.token("alice"))
            let b = try await Device.make("b", user: "alice", baseURL: url, directory: directory, configure: listening, token: try await server.token("alice"))
            await a.engine.start()
            await b.engine.start()
            defer {
                Task {
                    await a.engine.stop(); await b.engine.stop()
                }
            }
            #expect(try await eventually(within: .seconds(10)) { b.engine.status.liveConnected })
            let latencies = try await a.latencies(to: b, count: 3, title: "through nginx")
            // Each change arrives at once, not at the next heartbeat.
            #expect(latencies.allSatisfy { $0 < .seconds(5) }, "\(latencies)")
            print("write on a to row on b, live through nginx: \(latencies)")
        }
    }
}
