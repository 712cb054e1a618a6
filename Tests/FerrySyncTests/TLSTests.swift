import AsyncHTTPClient
import Ferry
import FerryHTTPClient
import FerryProtocol
import FerryTestSupport
import Foundation
import NIOSSL
import Testing

/// `ferry-server serve --tls-cert --tls-key` as a user runs it, with a CA
/// and a certificate this test makes with `openssl`: HTTP/2 and HTTP/1.1
/// chosen by ALPN, both transports syncing over it (URLSession in a mount
/// namespace whose system CA bundle is the test's CA, since libcurl trusts
/// only that bundle), and a certificate reloaded on SIGHUP while a live
/// stream stays open.
@Suite(.enabled(if: Prerequisites.runs(Prerequisites.mounts), "needs root to give URLSession the test's CA in a mount namespace"))
struct TLSTests {
    static let secret = "tls-test-secret-0123456789abcdef-0123456"

    /// A CA and a certificate for 127.0.0.1 it signed, as PEM files.
    struct Certificates {
        let directory: TemporaryDirectory
        var ca: String { directory.path("ca.pem") }
        var certificate: String { directory.path("cert.pem") }
        var key: String { directory.path("key.pem") }

        init() throws {
            directory = try TemporaryDirectory()
            let d = directory.url.path
            try Shell.run(
                """
                cd '\(d)' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
                  -days 2 -subj '/CN=Ferry Test CA' && \
                openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout key.pem -out server.csr -subj '/CN=127.0.0.1' && \
                printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.cnf
                """)
            try sign(into: "cert.pem")
        }

        /// Signs the server's key again into `file`: a renewed certificate, with a new serial.
        func sign(into file: String) throws {
            try Shell.run(
                """
                cd '\(directory.url.path)' && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
                  -out '\(file)' -days 2 -extfile san.cnf
                """)
        }

        /// The serial of the certificate a new connection to `port` is shown.
        func servedSerial(port: Int) throws -> String {
            try TLSTests.output(
                "echo | openssl s_client -connect 127.0.0.1:\(port) -CAfile '\(ca)' 2>/dev/null | openssl x509 -noout -serial")
        }

        /// The serial of the certificate in `file`.
        func serial(of file: String) throws -> String {
            try TLSTests.output("openssl x509 -noout -serial -in '\(directory.path(file))'")
        }

        /// An AsyncHTTPClient that trusts the test's CA, speaking HTTP/2 where it can or HTTP/1.1 only.
        func client(http1Only: Bool = false) throws -> HTTPClient {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(ca)
            var configuration = HTTPClient.Configuration(tlsConfiguration: tls, timeout: .init(connect: .seconds(10), read: .seconds(60)))
            if http1Only { configuration.httpVersion = .http1Only }
            return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        }
    }

    /// `ferry-server serve` on TLS, until `body` returns.
    static func serving<T>(
        _ certificates: Certificates, arguments: [String] = [], _ body: (ServerProcess, URL) async throws -> T
    ) async throws -> T {
        let data = try TemporaryDirectory()
        let port = try FreePort.pick()
        let server = try ServerProcess(
            [
                "serve", "--data-dir", data.path("server"), "--port", "\(port)", "--jwt-secret", secret,
                "--tls-cert", certificates.certificate, "--tls-key", certificates.key,
            ] + arguments, capturingErrors: true)
        defer { server.stop() }
        let line = try await server.waitForLine(startingWith: "Ferry server listening on")
        #expect(line == "Ferry server listening on https://127.0.0.1:\(port)")
        return try await body(server, try #require(URL(string: "https://127.0.0.1:\(port)")))
    }

    @Test func bothTransportsSyncOverHTTP2AndHTTP1() async throws {
        let certificates = try Certificates()
        let directory = try TemporaryDirectory()
        try await Self.serving(certificates) { server, url in
            let h2 = try certificates.client()
            let h1 = try certificates.client(http1Only: true)
            try await Self.shuttingDown([h2, h1]) {
                // ALPN: HTTP/2 for a client that offers it, HTTP/1.1 for one that does not.
                let viaH2 = try await h2.execute(HTTPClientRequest(url: url.appending(path: "healthz").absoluteString), timeout: .seconds(10))
                #expect(viaH2.status == .ok && viaH2.version == .http2)
                let viaH1 = try await h1.execute(HTTPClientRequest(url: url.appending(path: "readyz").absoluteString), timeout: .seconds(10))
                #expect(viaH1.status == .ok && viaH1.version == .http1_1)
                // Plain HTTP on the TLS port is no request at all.
                #expect(Shell.status("curl -sf --max-time 5 http://127.0.0.1:\(url.port!)/healthz") != 0)

                let token = try ServerProcess.token(for: "alice", secret: Self.secret)
                let a = try await Self.device("a", at: url, through: h2, in: directory, token: token, configure: { $0.debounce = .milliseconds(20) })
                let b = try await Self.device("b", at: url, through: h2, in: directory, token: token, configure: { $0.live = true })
                let c = try await Self.device("c", at: url, through: h1, in: directory, token: token, configure: { $0.live = true })
                await a.engine.start()
                await b.engine.start()
                await c.engine.start()
                #expect(try await eventually(within: .seconds(10)) { b.engine.status.liveConnected && c.engine.status.liveConnected })
                // Live over both: the HTTP/2 stream and the HTTP/1.1 one.
                try a.execute("INSERT INTO note(id, title) VALUES ('n1', 'over TLS')")
                #expect(try await eventually(within: .seconds(10)) { try b.note("n1")?.title == "over TLS" && c.note("n1")?.title == "over TLS" })
                await a.engine.stop()
                await b.engine.stop()
                await c.engine.stop()

                // URLSession (libcurl on Linux), given the test's CA as the system's in a mount namespace of its own.
                let worker = try WorkerProcess(
                    ["urlsession-sync", directory.path("urlsession.sqlite"), url.absoluteString, token, "alice"],
                    launcher: [
                        "/usr/bin/unshare", "--mount", "/bin/sh", "-c",
                        "mount --bind '\(certificates.ca)' /etc/ssl/certs/ca-certificates.crt && exec \"$0\" \"$@\"",
                    ])
                #expect(worker.wait(atMost: .seconds(60)))
                #expect(worker.readRemainingLines() == ["synced pushed=1 pending=0"])
                let row = try await HTTPSyncTransport(baseURL: url, client: h2).row(scope: "user:alice", table: "item", rowID: "over-urlsession", token: token)
                #expect(row?.values["writer"] == .text("worker"))
            }
        }
    }

    @Test func aReloadedCertificateServesNewConnectionsAndLiveStreamsStayOpen() async throws {
        let certificates = try Certificates()
        let directory = try TemporaryDirectory()
        try await Self.serving(certificates) { server, url in
            let client = try certificates.client()
            // `b` has its own client: its live stream's connection is the one that must survive the reload.
            let listening = try certificates.client()
            try await Self.shuttingDown([client, listening]) {
                let first = try certificates.servedSerial(port: url.port!)
                #expect(first == (try certificates.serial(of: "cert.pem")))
                let token = try ServerProcess.token(for: "alice", secret: Self.secret)
                let a = try await Self.device("a", at: url, through: client, in: directory, token: token, configure: { $0.debounce = .milliseconds(20) })
                let b = try await Self.device("b", at: url, through: listening, in: directory, token: token, configure: { $0.live = true })
                await a.engine.start()
                await b.engine.start()
                #expect(try await eventually(within: .seconds(10)) { b.engine.status.liveConnected })
                let opened = try await Self.liveOpens(url, client: client)

                // Renewed in place, as certbot renews, then SIGHUP.
                try certificates.sign(into: "renewed.pem")
                try Shell.run("cp '\(certificates.directory.path("renewed.pem"))' '\(certificates.certificate)'")
                kill(server.process.processIdentifier, SIGHUP)
                #expect(try await eventually(within: .seconds(10)) { server.printedErrors.contains { $0.contains("TLS certificate reloaded") } })
                #expect(try certificates.servedSerial(port: url.port!) == (try certificates.serial(of: "renewed.pem")))
                #expect(try certificates.servedSerial(port: url.port!) != first)

                // The stream opened before the reload still carries news.
                try a.execute("INSERT INTO note(id, title) VALUES ('n1', 'after the reload')")
                #expect(try await eventually(within: .seconds(10)) { try b.note("n1")?.title == "after the reload" })
                #expect(try await Self.liveOpens(url, client: client) == opened, "the news came on the stream opened before the reload")

                // A broken file is refused, and the certificate in use stays.
                try Shell.run("echo garbage > '\(certificates.certificate)'")
                kill(server.process.processIdentifier, SIGHUP)
                #expect(try await eventually(within: .seconds(10)) { server.printedErrors.contains { $0.contains("TLS certificate not reloaded") } })
                #expect(try certificates.servedSerial(port: url.port!) == (try certificates.serial(of: "renewed.pem")))
                await a.engine.stop()
                await b.engine.stop()
            }
        }
    }

    /// An HTTP/2 connection leaves the HTTP/1.1 deadlines once it has chosen
    /// HTTP/2: a live stream outlives a 1 s header and idle timeout. And an
    /// error that closes an HTTP/1.1 connection (`Connection: close`, which
    /// HTTP/2 forbids) arrives whole on an HTTP/2 stream, not as a reset.
    @Test func http2LiveStreamsOutliveTheHTTP1DeadlinesAndErrorsArriveWhole() async throws {
        let certificates = try Certificates()
        let directory = try TemporaryDirectory()
        let arguments = ["--header-timeout", "1", "--body-timeout", "1", "--idle-timeout", "1", "--max-live-streams", "1"]
        try await Self.serving(certificates, arguments: arguments) { _, url in
            let client = try certificates.client()
            let listening = try certificates.client()
            try await Self.shuttingDown([client, listening]) {
                let token = try ServerProcess.token(for: "alice", secret: Self.secret)
                let a = try await Self.device("a", at: url, through: client, in: directory, token: token)
                let b = try await Self.device("b", at: url, through: listening, in: directory, token: token, configure: { $0.live = true })
                await b.engine.start()
                #expect(try await eventually(within: .seconds(10)) { b.engine.status.liveConnected })
                let opened = try await Self.liveOpens(url, client: client)
                try await Task.sleep(for: .seconds(3))
                try a.execute("INSERT INTO note(id, title) VALUES ('n1', 'three seconds later')")
                try await a.engine.sync()
                #expect(try await eventually(within: .seconds(10)) { try b.note("n1")?.title == "three seconds later" })
                #expect(try await Self.liveOpens(url, client: client) == opened, "the stream stayed open past the HTTP/1.1 deadlines")

                // A second live stream is over alice's cap of one: 429, whole, over HTTP/2.
                var request = HTTPClientRequest(url: url.absoluteString + SyncEndpoint.live(scopes: ["user:alice"]).path)
                request.headers.add(name: "Authorization", value: "Bearer \(token)")
                let response = try await client.execute(request, timeout: .seconds(10))
                let body = try await response.body.collect(upTo: 1 << 16)
                #expect(response.version == .http2 && response.status.code == 429)
                #expect((try? JSONDecoder().decode(ErrorResponse.self, from: Data(buffer: body)))?.code == .tooManyRequests)
                await b.engine.stop()
            }
        }
    }

    /// The connection limits hold over TLS: a connection that says nothing
    /// is closed at the idle timeout, handshake done or not (a TLS one once
    /// its close has had its few seconds), and one past the cap is closed
    /// before any handshake.
    @Test func silentConnectionsAreClosedAndOnePastTheCapIsRefused() async throws {
        let certificates = try Certificates()
        try await Self.serving(certificates, arguments: ["--idle-timeout", "1", "--header-timeout", "1", "--max-connections", "2"]) { _, url in
            let port = url.port!
            // A TLS session that never sends a request, and a TCP connection that never starts TLS
            // (each exits when the server closes it).
            let silentTLS = try Self.background(
                """
                python3 -c 'import socket, ssl; s = ssl.create_default_context(cafile="\(certificates.ca)").wrap_socket(\
                socket.create_connection(("127.0.0.1", \(port))), server_hostname="127.0.0.1"); s.recv(1)'
                """)
            let silentTCP = try Self.background(
                "python3 -c 'import socket; s = socket.create_connection((\"127.0.0.1\", \(port))); s.recv(1)'")
            defer {
                for process in [silentTLS, silentTCP] where process.isRunning {
                    kill(process.processIdentifier, SIGKILL)
                    process.waitUntilExit()
                }
            }
            try await Task.sleep(for: .milliseconds(500))
            // Both slots are taken: a third connection gets no handshake.
            #expect(Shell.status("echo | timeout 5 openssl s_client -connect 127.0.0.1:\(port) -CAfile '\(certificates.ca)'") != 0)
            // The server closes the silent TCP connection at its deadline...
            #expect(try await eventually(within: .seconds(5)) { !silentTCP.isRunning })
            // ...and the silent TLS session too, freeing its slot: requests go through again.
            #expect(try await eventually(within: .seconds(15)) { !silentTLS.isRunning })
            #expect(
                try await eventually(within: .seconds(15)) {
                    Shell.status("curl -sf --max-time 5 --cacert '\(certificates.ca)' https://127.0.0.1:\(port)/livez") == 0
                        && Shell.status("curl -sf --max-time 5 --cacert '\(certificates.ca)' https://127.0.0.1:\(port)/livez") == 0
                })
        }
    }

    /// Starts `command` under `/bin/sh`, its output discarded.
    static func background(_ command: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(filePath: "/bin/sh")
        process.arguments = ["-c", "exec " + command + " >/dev/null 2>&1"]
        try process.run()
        return process
    }

    /// Runs `body`, then shuts `clients` down, whether it threw or not.
    static func shuttingDown<T>(_ clients: [HTTPClient], _ body: () async throws -> T) async throws -> T {
        do {
            let value = try await body()
            for client in clients { try await client.shutdown() }
            return value
        } catch {
            for client in clients { try? await client.shutdown() }
            throw error
        }
    }

    /// A device of alice's syncing with the server at `url` through `client`.
    static func device(
        _ name: String, at url: URL, through client: HTTPClient, in directory: TemporaryDirectory, token: String,
        configure: (inout SyncConfiguration) -> Void = { _ in }
    ) async throws -> Device {
        try await Device.make(
            name, user: "alice", baseURL: url, directory: directory, configure: configure,
            transport: { _ in HTTPSyncTransport(baseURL: url, requestTimeout: .seconds(10), client: client) }, token: token)
    }

    /// Live streams the server opened (200) so far, from its `/metrics`.
    static func liveOpens(_ url: URL, client: HTTPClient) async throws -> Int {
        let response = try await client.execute(HTTPClientRequest(url: url.appending(path: "metrics").absoluteString), timeout: .seconds(10))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        return text.split(separator: "\n")
            .filter { $0.hasPrefix("ferry_http_requests_total") && $0.contains(#"route="/v1/live""#) && $0.contains(#"status="200""#) }
            .compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +)
    }

    /// What `command` prints, trimmed; throws if it exits non-zero.
    static func output(_ command: String) throws -> String {
        let process = Process()
        let pipe = Pipe()
        process.executableURL = URL(filePath: "/bin/sh")
        process.arguments = ["-c", command]
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Shell.Failed(command: command) }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
