import AsyncHTTPClient
import Foundation
import FerryTestSupport
import NIOCore
import NIOHTTP1

/// Headless Chromium driven over the W3C WebDriver protocol: Debian's
/// `chromedriver` started on a free loopback port, one browser session,
/// both stopped by ``quit()`` (and the driver by `deinit` if a test throws).
///
/// ```swift
/// let browser = try await WebDriver.start()
/// try await browser.open("http://127.0.0.1:8081/console")
/// try await browser.type("#token", "secret")
/// ```
final class WebDriver: @unchecked Sendable {
    /// Where Debian puts the driver; the tests are skipped (outside CI) without it.
    static let driverPath = "/usr/bin/chromedriver"
    static var available: Bool { FileManager.default.isExecutableFile(atPath: driverPath) }

    private let driver: ServerProcess
    private let base: String
    private let session: String
    private let client = HTTPClient(eventLoopGroupProvider: .singleton)

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private init(driver: ServerProcess, base: String, session: String) {
        (self.driver, self.base, self.session) = (driver, base, session)
    }

    deinit {
        driver.kill()
        try? client.syncShutdown()
    }

    /// Starts the driver and a headless browser `width` pixels wide.
    static func start(width: Int = 1280, height: Int = 900) async throws -> WebDriver {
        let driver = try ServerProcess(["--port=0"], executable: URL(filePath: driverPath))
        let line = try await driver.waitForLine(startingWith: "ChromeDriver was started successfully on port ")
        let port = line.dropFirst("ChromeDriver was started successfully on port ".count).prefix { $0.isNumber }
        let base = "http://127.0.0.1:\(port)"
        let capabilities: [String: Any] = [
            "capabilities": [
                "alwaysMatch": [
                    "browserName": "chrome",
                    "goog:chromeOptions": [
                        "binary": "/usr/bin/chromium",
                        "args": [
                            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=\(width),\(height)",
                            "--force-device-scale-factor=1",
                        ],
                    ],
                ]
            ]
        ]
        let answer = try await Self.call(HTTPClient.shared, .POST, base + "/session", capabilities)
        guard let value = answer["value"] as? [String: Any], let session = value["sessionId"] as? String else {
            driver.kill()
            throw Failure(description: "chromedriver started no session: \(answer)")
        }
        let browser = WebDriver(driver: driver, base: base, session: session)
        try await browser.resize(width: width, height: height)
        return browser
    }

    func quit() async {
        _ = try? await command(.DELETE, "")
        driver.stop(grace: .seconds(5))
    }

    func resize(width: Int, height: Int) async throws {
        _ = try await command(.POST, "/window/rect", ["width": width, "height": height])
    }

    func open(_ url: String) async throws {
        _ = try await command(.POST, "/url", ["url": url])
    }

    var url: String {
        get async throws { try await command(.GET, "/url") as? String ?? "" }
    }

    var title: String {
        get async throws { try await command(.GET, "/title") as? String ?? "" }
    }

    /// The page's HTML as the browser holds it now.
    var source: String {
        get async throws { try await command(.GET, "/source") as? String ?? "" }
    }

    /// The visible text of the first element matching a CSS selector.
    func text(_ selector: String) async throws -> String {
        try await command(.GET, "/element/\(try await element(selector))/text") as? String ?? ""
    }

    func type(_ selector: String, _ text: String) async throws {
        let id = try await element(selector)
        _ = try await command(.POST, "/element/\(id)/clear", [String: Any]())
        _ = try await command(.POST, "/element/\(id)/value", ["text": text])
    }

    func click(_ selector: String) async throws {
        _ = try await command(.POST, "/element/\(try await element(selector))/click", [String: Any]())
    }

    /// Presses `keys` together on whatever has focus, as one chord: all
    /// down in order, then up in reverse (`"\u{E008}\u{E004}"` is
    /// Shift+Tab, `"\u{E004}"` Tab).
    func chord(_ keys: String) async throws {
        let scalars = keys.unicodeScalars.map { String($0) }
        let actions: [[String: Any]] = scalars.map { ["type": "keyDown", "value": $0] } + scalars.reversed().map { ["type": "keyUp", "value": $0] }
        _ = try await command(.POST, "/actions", ["actions": [["type": "key", "id": "keyboard", "actions": actions]]])
    }

    /// Waits until an element matches `selector` (a page after a click may still be loading).
    func waitFor(_ selector: String, timeout: Duration = .seconds(10)) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            if (try? await element(selector)) != nil { return }
            guard ContinuousClock.now < deadline else { throw Failure(description: "nothing matched \(selector) within \(timeout)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Runs script in the page and returns its result.
    func execute(_ script: String) async throws -> Any? {
        try await command(.POST, "/execute/sync", ["script": script, "args": [Any]()])
    }

    /// Deletes every cookie, as a browser restarted without them would.
    func deleteCookies() async throws {
        _ = try await command(.DELETE, "/cookie")
    }

    func cookies() async throws -> [[String: Any]] {
        try await command(.GET, "/cookie") as? [[String: Any]] ?? []
    }

    /// A PNG of the whole viewport, saved at `path`.
    func screenshot(to path: URL) async throws {
        guard let encoded = try await command(.GET, "/screenshot") as? String, let png = Data(base64Encoded: encoded) else {
            throw Failure(description: "no screenshot")
        }
        try FileManager.default.createDirectory(at: path.deletingLastPathComponent(), withIntermediateDirectories: true)
        try png.write(to: path)
    }

    private func element(_ selector: String) async throws -> String {
        let value = try await command(.POST, "/element", ["using": "css selector", "value": selector])
        guard let found = value as? [String: Any], let id = found.values.first as? String else {
            throw Failure(description: "no element matches \(selector)")
        }
        return id
    }

    private func command(_ method: HTTPMethod, _ path: String, _ body: [String: Any]? = nil) async throws -> Any? {
        let answer = try await Self.call(client, method, base + "/session/\(session)" + path, body)
        if let value = answer["value"] as? [String: Any], let error = value["error"] as? String {
            throw Failure(description: "\(method) \(path): \(error): \(value["message"] ?? "")")
        }
        return answer["value"]
    }

    private static func call(_ client: HTTPClient, _ method: HTTPMethod, _ url: String, _ body: [String: Any]?) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: try JSONSerialization.data(withJSONObject: body)))
        }
        let response = try await client.execute(request, timeout: .seconds(60))
        let bytes = try await response.body.collect(upTo: 64 << 20)
        return (try JSONSerialization.jsonObject(with: Data(buffer: bytes)) as? [String: Any]) ?? [:]
    }
}
