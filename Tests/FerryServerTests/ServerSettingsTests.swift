import Foundation
import Testing
import FerryTestSupport

/// `ferry-server`'s settings as an operator gives them, against the real
/// process: a JSON or YAML file, `FERRY_*` variables over it, flags over
/// both, secrets from files; `config check`; one clear line for a setting
/// that cannot be used; `--help` and the README from one table; JSON logs.
@Suite(.serialized) struct ServerSettingsTests {
    static let secret = "settings-secret-0123456789abcdef-0123456789"

    /// `config check`'s lines: key → (value, origin).
    static func check(_ arguments: [String], environment: [String: String]) throws -> (status: Int32, settings: [String: (value: String, origin: String)], output: String) {
        let result = try ServerProcess.run(["config", "check"] + arguments, environment: environment)
        var settings: [String: (String, String)] = [:]
        for line in result.output.split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard parts.count >= 2 else { continue }
            settings[parts[0]] = (parts[1], parts.dropFirst(2).joined(separator: " "))
        }
        return (result.status, settings, result.output)
    }

    /// A valid pull padded with JSON whitespace to `bytes`.
    static func pull(bytes: Int) -> String {
        let body = #"{"clientID":"c1","scopes":[{"scope":"user:alice"}]}"#
        return body + String(repeating: " ", count: max(0, bytes - body.utf8.count))
    }

    @Test func aFileWithEnvironmentAndFlagOverridesGivesTheDocumentedSettings() async throws {
        let directory = try TemporaryDirectory()
        let secretFile = directory.path("jwt-secret.txt")
        try (Self.secret + "\n").write(toFile: secretFile, atomically: true, encoding: .utf8)
        let file = directory.path("ferry.yaml")
        try """
        port: 0
        dataDir: \(directory.path("data"))
        limits:
          maxBodyBytes: 2048
        connections:
          idleTimeout: 20
          maxLiveStreams: 3
        rateLimits:
          pushes: "5/10"
        policies:
          - invoice=manual
          - note=serverWins
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let environment = [
            "FERRY_JWT_SECRET": "", "FERRY_JWT_SECRET_FILE": secretFile,
            "FERRY_LIMITS_MAX_BODY_BYTES": "4096", "FERRY_CONNECTIONS_IDLE_TIMEOUT": "25",
        ]
        let checked = try Self.check(["--config", file, "--idle-timeout", "30"], environment: environment)
        #expect(checked.status == 0, "\(checked.output)")
        let settings = checked.settings
        #expect(settings["port"]?.value == "0" && settings["port"]?.origin == "port in \(file)")
        #expect(settings["host"]?.value == "127.0.0.1" && settings["host"]?.origin == "default")
        #expect(settings["limits.maxBodyBytes"]?.value == "4096" && settings["limits.maxBodyBytes"]?.origin == "FERRY_LIMITS_MAX_BODY_BYTES")
        #expect(settings["connections.idleTimeout"]?.value == "30" && settings["connections.idleTimeout"]?.origin == "--idle-timeout")
        #expect(settings["connections.maxLiveStreams"]?.origin == "connections.maxLiveStreams in \(file)")
        #expect(settings["rateLimits.pushes"]?.value == "5/10")
        #expect(checked.output.contains("invoice=manual, note=serverWins"))
        #expect(settings["jwtSecret"]?.value == "<redacted>" && settings["jwtSecret"]?.origin == "FERRY_JWT_SECRET_FILE")
        #expect(!checked.output.contains(Self.secret), "the secret is never printed")

        // A mistyped variable is no setting: said, and ignored.
        let mistyped = try Self.check(["--config", file], environment: environment.merging(["FERRY_CONNECTIONS_IDLE_TIMOUT": "9"]) { $1 })
        #expect(mistyped.output.contains("warning: FERRY_CONNECTIONS_IDLE_TIMOUT is not a setting and is ignored; did you mean FERRY_CONNECTIONS_IDLE_TIMEOUT?"))
        #expect(mistyped.settings["connections.idleTimeout"]?.value == "25")

        // The same file runs the server: the body limit is the environment's, the secret the file's.
        let server = try ServerProcess(["serve", "--config", file], environment: environment)
        defer { server.stop() }
        let line = try await server.waitForLine(startingWith: "Ferry server listening on http://127.0.0.1:")
        let port = try FerryServerCommandTests.port(from: line)
        let token = try ServerProcess.token(for: "alice", secret: Self.secret)
        let fits = try await EventStreamClient.request(port: port, method: "POST", path: "/v1/pull", token: token, body: Self.pull(bytes: 3000))
        #expect(fits.status.contains(" 200 "), "\(fits)")
        let tooLarge = try await EventStreamClient.request(port: port, method: "POST", path: "/v1/pull", token: token, body: Self.pull(bytes: 5000))
        #expect(tooLarge.status.contains(" 413 "), "\(tooLarge)")

        // A JSON file reads the same keys.
        let json = directory.path("ferry.json")
        try #"{"limits": {"maxBodyBytes": 2048}, "identityProvider": {"tokenLeeway": 5}, "webhooks": {"endpoints": []}, "rateLimits": {"pushes": 30}}"#
            .write(toFile: json, atomically: true, encoding: .utf8)
        let fromJSON = try Self.check(["--config", json], environment: ["FERRY_JWT_SECRET": ""])
        #expect(fromJSON.status == 0, "\(fromJSON.output)")
        #expect(fromJSON.settings["limits.maxBodyBytes"]?.value == "2048" && fromJSON.settings["limits.maxBodyBytes"]?.origin == "limits.maxBodyBytes in \(json)")
        #expect(fromJSON.settings["identityProvider.tokenLeeway"]?.value == "5")
        // A rate written as a JSON number reads as its text: 30 a second, the default burst of ten seconds.
        #expect(fromJSON.settings["rateLimits.pushes"]?.value == "30" && fromJSON.settings["rateLimits.pushes"]?.origin == "rateLimits.pushes in \(json)")
        // A flat dotted key is as good as a nested one, numbers and all.
        let flat = directory.path("flat.json")
        try #"{"limits.maxBodyBytes": 4096, "drainSeconds": 2}"#.write(toFile: flat, atomically: true, encoding: .utf8)
        let fromFlat = try Self.check(["--config", flat], environment: ["FERRY_JWT_SECRET": ""])
        #expect(fromFlat.status == 0 && fromFlat.settings["limits.maxBodyBytes"]?.value == "4096", "\(fromFlat.output)")
    }

    @Test func anUnknownKeyOrABadValueIsOneLineNamingItAndTheServerDoesNotStart() throws {
        let directory = try TemporaryDirectory()
        let data = directory.path("data")
        let cases: [(file: String?, environment: [String: String], flags: [String], says: String)] = [
            ("connections:\n  idleTimout: 20\n", [:], [], "connections.idleTimout in %FILE%: unknown setting (did you mean `connections.idleTimeout`?)"),
            ("connections:\n  idleTimeout: soon\n", [:], [], "connections.idleTimeout in %FILE%: expected a number of seconds"),
            ("rateLimits:\n  pushes: fast\n", [:], [], "rateLimits.pushes in %FILE%: a rate is PER_SECOND or PER_SECOND/BURST"),
            ("- port\n", [:], [], "--config %FILE%: the file must be a mapping of settings"),
            ("rateLimits:\n  pushes: true\n", [:], [], "rateLimits.pushes in %FILE%: a rate is PER_SECOND"),
            // JSON's true and false are no numbers (swift-configuration alone reads them as 1 and 0).
            (#"{"limits": {"maxBodyBytes": true}}"#, [:], [], "limits.maxBodyBytes in %FILE%: expected a whole number"),
            (#"{"drainSeconds": false}"#, [:], [], "drainSeconds in %FILE%: expected a number of seconds"),
            (nil, ["FERRY_LIMITS_MAX_BODY_BYTES": "4M"], [], "FERRY_LIMITS_MAX_BODY_BYTES: expected a whole number, got `4M`"),
            (nil, ["FERRY_CONNECTIONS_MAX_CONNECTIONS": "0"], [], "FERRY_CONNECTIONS_MAX_CONNECTIONS must be 1–1000000"),
            (nil, ["FERRY_JWT_SECRET": Self.secret, "FERRY_JWT_SECRET_FILE": "/dev/null"], [], "FERRY_JWT_SECRET and FERRY_JWT_SECRET_FILE both set jwtSecret"),
            (nil, [:], ["--admin-port", "0"], "--admin-port needs the admin token"),
            (nil, [:], ["--tls-key", "/etc/hostname"], "--tls-key needs --tls-cert too"),
            (nil, ["FERRY_OTEL_ENDPOINT": "collector:4318"], [], "FERRY_OTEL_ENDPOINT must be an http or https URL"),
            (nil, ["FERRY_OTEL_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"], [], "OTEL_EXPORTER_OTLP_PROTOCOL=grpc: ferry-server exports over OTLP/HTTP"),
            (nil, ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318"], ["--otel-endpoint", "http://127.0.0.1:4318"], "OTEL_EXPORTER_OTLP_ENDPOINT is set: give the collector with --otel-endpoint alone"),
            (nil, [:], ["--tls-cert", "/etc/hostname", "--tls-key", "/etc/hostname"], "badRequest: cannot read a PEM certificate from /etc/hostname"),
        ]
        for (index, item) in cases.enumerated() {
            let file = directory.path("bad-\(index).\(item.file?.hasPrefix("{") == true ? "json" : "yaml")")
            var arguments = ["serve", "--port", "0", "--data-dir", data] + item.flags
            if let text = item.file {
                try text.write(toFile: file, atomically: true, encoding: .utf8)
                arguments += ["--config", file]
            }
            let result = try ServerProcess.run(arguments, environment: ["FERRY_JWT_SECRET": ""].merging(item.environment) { $1 }, timeout: .seconds(20))
            let lines = result.output.split(separator: "\n")
            let expected = "Error: " + item.says.replacingOccurrences(of: "%FILE%", with: file)
            #expect(result.status != 0 && lines.count == 1 && lines.first?.hasPrefix(expected) == true, "\(item.says): \(result.output)")
            #expect(!FileManager.default.fileExists(atPath: data), "nothing written for a server that did not start")
        }
    }

    /// Every setting of `config table` shows in `serve --help` under its
    /// flag, with its file key and its variable; the README holds the table as printed.
    @Test func theHelpAndTheReadmeShowEverySettingFromOneTable() throws {
        let table = try ServerProcess.run(["config", "table"])
        #expect(table.status == 0)
        let rows = table.output.split(separator: "\n").dropFirst(2).map { row in
            row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "`")) }
        }
        #expect(rows.count >= 45, "\(rows.count) settings")
        let help = try ServerProcess.run(["serve", "--help"]).output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for row in rows {
            let (key, environment, flag) = (row[0], row[1], row[2])
            #expect(help.contains("\(flag) <"), "\(flag) is not in serve --help")
            #expect(help.contains("(file: \(key), env: \(environment))"), "\(key)'s names are not in serve --help")
        }
        let readme = try String(
            contentsOf: URL(filePath: #filePath).deletingLastPathComponent().appending(path: "../../README.md").standardized, encoding: .utf8)
        let printed = table.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(readme.contains("<!-- settings -->\n" + printed + "\n<!-- /settings -->"), "README.md's settings table differs from `ferry-server config table`")
    }

    /// `--log-format json`: every line standard error gets is one JSON
    /// object; a request's lines carry its id. No line, even at debug (where
    /// the service lifecycle describes every service), carries a secret.
    @Test func jsonLogsParseLineByLineWithTheRequestID() async throws {
        let directory = try TemporaryDirectory()
        let adminToken = "admin-token-never-logged-0123456789"
        let webhookSecret = "webhook-secret-never-logged-0123"
        let server = try ServerProcess(
            [
                "serve", "--port", "0", "--data-dir", directory.path("data"), "--jwt-secret", Self.secret, "--log-format", "json",
                "--log-level", "debug", "--admin-port", "0", "--admin-token", adminToken,
                "--webhook", "hook=http://127.0.0.1:9/hook", "--webhook-secret", webhookSecret,
            ],
            capturingErrors: true)
        defer { server.stop() }
        let line = try await server.waitForLine(startingWith: "Ferry server listening on http://127.0.0.1:")
        let port = try FerryServerCommandTests.port(from: line)
        _ = try await EventStreamClient.request(port: port, method: "GET", path: "/livez")
        try await Task.sleep(for: .milliseconds(300))
        server.stop()
        let lines = server.printedErrors.filter { !$0.isEmpty }
        #expect(lines.count >= 2, "\(lines)")
        var requestIDs = 0
        for line in lines {
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String]
            #expect(object?["level"] != nil && object?["message"] != nil && object?["time"] != nil && object?["label"] != nil, "\(line)")
            if object?["hb.request.id"] != nil { requestIDs += 1 }
        }
        #expect(requestIDs >= 1, "no line carries a request id: \(lines)")
        #expect(lines.contains { $0.contains("jwtSecret: <redacted>") }, "the services' descriptions were logged, redacted")
        for secret in [Self.secret, adminToken, webhookSecret] {
            #expect(!lines.contains { $0.contains(secret) }, "a log line carries a secret: \(lines.filter { $0.contains(secret) })")
        }
    }
}
