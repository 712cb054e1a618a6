import Ferry
import FerryProtocol
@testable import FerryServer
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// The console in a real browser: headless Chromium from Debian, driven
/// over WebDriver, against the real server with a real store. Screenshots
/// of every page at 1280 and 390 pixels wide land in
/// `.build/test-artifacts/console/`. `.ci/run` installs Chromium; elsewhere
/// the suite is skipped without it.
@Suite(.serialized, .enabled(if: WebDriver.available || ProcessInfo.processInfo.environment["CI"] != nil))
struct ConsoleBrowserTests {
    static let artifacts = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: ".build/test-artifacts/console")

    @Test func anOperatorUsesEveryPageInABrowser() async throws {
        let sessions: (inout FerryServerConfiguration) -> Void = {
            SyncServer.withAdmin(&$0)
            $0.admin?.consoleSessionTimeout = .seconds(8)
        }
        try await SyncServer.with(.sqlite, configure: sessions) { server in
            let directory = try TemporaryDirectory()
            let (phone, _) = try await ConsoleTests.twoDevicesInConflict(server, directory: directory)
            #expect(try await server.admin.send(.POST, "/admin/v1/scopes", json: #"{"scope":"trip@alice","owner":"alice"}"#).status == 201)
            let shared: (inout SyncConfiguration) -> Void = { $0.sharedScopes = ["trip@alice"] }
            let alice = try await Device.make("alice-trip", user: "alice", server: server, directory: directory, configure: shared)
            try alice.execute("INSERT INTO item(id, listScope, name) VALUES ('t1', 'trip@alice', 'tickets')")
            try await alice.engine.sync()
            let bob = try await Device.make("bob", user: "bob", server: server, directory: directory, configure: shared)

            let console = "http://127.0.0.1:\(try #require(server.adminPort))"
            try? FileManager.default.removeItem(at: Self.artifacts)
            let browser = try await WebDriver.start()
            do {
                try await Self.use(browser, console: console, phone: phone, bob: bob)
            } catch {
                try? await browser.screenshot(to: Self.artifacts.appending(path: "failure.png"))
                let url = (try? await browser.url) ?? "?"
                try? Data(("<!-- \(url) -->\n" + ((try? await browser.source) ?? "")).utf8).write(to: Self.artifacts.appending(path: "failure.html"))
                await browser.quit()
                throw error
            }
            await browser.quit()
        }
    }

    private static func use(_ browser: WebDriver, console: String, phone: Device, bob: Device) async throws {
        // Signed out, the console sends the sign-in form; a wrong token is refused there.
        try await browser.open(console + "/console")
        #expect(try await browser.url.hasSuffix("/console/login"))
        #expect(try await browser.title == "Sign in · Ferry Console")
        try await browser.screenshot(to: artifacts.appending(path: "login-1280.png"))
        try await browser.resize(width: 390, height: 900)
        try await browser.screenshot(to: artifacts.appending(path: "login-390.png"))
        try await browser.resize(width: 1280, height: 900)
        try await browser.type("#token", "not-the-admin-token-0123456789abcdef")
        try await browser.click("form.stack button[type=submit]")
        try await browser.waitFor("#login-error")
        #expect(try await browser.text("#login-error") == "That is not this server's admin token.")

        // The keyboard: the token field has focus; Tab reaches the button, Shift+Tab back past it the skip link.
        func focused() async throws -> String { try await browser.execute("return document.activeElement.textContent.trim()") as? String ?? "" }
        try await browser.click("#token")
        try await browser.chord("\u{E004}")
        #expect(try await focused() == "Sign in")
        try await browser.chord("\u{E008}\u{E004}")
        try await browser.chord("\u{E008}\u{E004}")
        #expect(try await focused() == "Skip to content")

        try await browser.type("#token", AdminClient.token)
        try await browser.click("form.stack button[type=submit]")
        try await browser.waitFor("#activity")
        #expect(try await browser.url == console + "/console")
        let cookie = try #require(try await browser.cookies().first { $0["name"] as? String == Console.cookie })
        #expect(cookie["httpOnly"] as? Bool == true && cookie["sameSite"] as? String == "Strict")
        // HttpOnly: the page's script cannot read the session.
        #expect(try await browser.execute("return document.cookie") as? String == "")

        // Every page, at a desktop and a phone width, with the store's data and no sideways scrolling.
        let pages: [(name: String, path: String, shows: String)] = [
            ("overview", "/console", "Live rows"),
            ("users", "/console/users", "alice"),
            ("user", "/console/users/alice", "Mutations set aside"),
            ("scopes", "/console/scopes", "trip@alice"),
            ("scope", "/console/scopes/trip%40alice", "Add a member"),
            ("rows", "/console/rows?scope=user%3Aalice&table=note", "from the phone"),
            ("inspector", "/console/rows?scope=user%3Aalice&table=note&row=n1", "kept the server's value"),
            ("conflicts", "/console/conflicts", "from the laptop"),
        ]
        for width in [1280, 390] {
            try await browser.resize(width: width, height: 900)
            for page in pages {
                try await browser.open(console + page.path)
                try await browser.waitFor("main h1")
                let text = try await browser.text("main")
                #expect(text.contains(page.shows), "\(page.name) at \(width): \(text)")
                let overflow = try await browser.execute("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
                #expect((overflow as? Int ?? 1) <= 0, "\(page.name) scrolls sideways at \(width) px")
                try await browser.screenshot(to: artifacts.appending(path: "\(page.name)-\(width).png"))
            }
        }
        try await browser.resize(width: 1280, height: 900)

        // The inspector tells the conflict: the losing device and its value, in the timeline.
        try await browser.open(console + "/console/rows?scope=user%3Aalice&table=note&row=n1")
        let timeline = try await browser.text("table.timeline")
        #expect(timeline.contains("conflict") && timeline.contains("sent \"from the laptop\", server held \"from the phone\""), "\(timeline)")

        // The overview's live panel follows a push without a reload.
        try await browser.open(console + "/console")
        let before = try await browser.text("#activity")
        try phone.execute("UPDATE note SET body = 'oat milk' WHERE id = 'n1'")
        try await phone.engine.sync()
        // The panel is sent every 2 s; well inside the session's idle time (looking does not renew it).
        let deadline = ContinuousClock.now + .seconds(6)
        var after = before
        while after == before, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(250))
            after = try await browser.text("#activity")
        }
        #expect(after != before, "the live panel never changed")

        // A form whose CSRF token was taken out is refused, and changes nothing.
        try await browser.open(console + "/console/scopes/trip%40alice")
        _ = try await browser.execute(
            "document.querySelectorAll('form.stack input[name=csrf]').forEach(function (input) { input.remove(); });")
        try await browser.type("#new-member", "bob")
        try await browser.click("form.stack button[type=submit]")
        try await browser.waitFor("p.error")
        #expect(try await browser.text("main").contains("did not carry this session's CSRF token"))
        #expect(try await bob.engine.sync().refusedScopes == ["trip@alice"])

        // The same form, whole: bob becomes a member and can pull the scope.
        try await browser.open(console + "/console/scopes/trip%40alice")
        try await browser.type("#new-member", "bob")
        try await browser.click("form.stack button[type=submit]")
        try await browser.waitFor("p.notice")
        #expect(try await browser.text("p.notice") == "bob is now a read member.")
        #expect(try await bob.engine.sync().refusedScopes.isEmpty)
        let name = try await bob.database.read { db in try String.fetchOne(db, sql: "SELECT name FROM item WHERE id = 't1'") }
        #expect(name == "tickets")

        // The session expires after its idle time (8 s here): the next page is the sign-in form.
        try await browser.open("about:blank")
        try await Task.sleep(for: .seconds(9))
        try await browser.open(console + "/console/scopes")
        #expect(try await browser.url.hasSuffix("/console/login"))
    }
}
