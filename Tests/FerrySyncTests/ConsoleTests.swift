import Ferry
@testable import FerryPostgres
import FerryProtocol
@testable import FerryServer
import GRDB
import Foundation
import NIOCore
import Testing
import FerryTestSupport

/// The console on the admin port, against the real server on a real socket
/// and a real store: signing in, every page with real data, the row
/// inspector's story of a conflict, a member added from the page, CSRF and
/// session expiry.
@Suite(.postgresTurns, .serialized)
struct ConsoleTests {
    /// Two devices of alice edit note `n1`'s title offline; the laptop's
    /// older edit loses to the phone's (last write wins): a conflict.
    static func bytes(_ data: Data) -> AsyncThrowingStream<ByteBuffer, any Error> {
        AsyncThrowingStream {
            $0.yield(ByteBuffer(bytes: data)); $0.finish()
        }
    }

    static func twoDevicesInConflict(_ server: SyncServer, directory: TemporaryDirectory) async throws -> (phone: Device, laptop: Device) {
        let phone = try await Device.make("phone", user: "alice", server: server, directory: directory)
        let laptop = try await Device.make("laptop", user: "alice", server: server, directory: directory)
        try phone.execute("INSERT INTO note(id, title, body) VALUES ('n1', 'groceries', 'milk')")
        try await phone.engine.sync()
        try await laptop.engine.sync()
        // The laptop's edit is the older one: last write wins keeps the phone's.
        try laptop.execute("UPDATE note SET title = 'from the laptop' WHERE id = 'n1'")
        try await Task.sleep(for: .milliseconds(5))
        try phone.execute("UPDATE note SET title = 'from the phone' WHERE id = 'n1'")
        try await phone.engine.sync()
        let lost = try await laptop.engine.sync()
        #expect(lost.conflicts == 1)
        return (phone, laptop)
    }

    /// A wrong token is refused; the right one opens a session cookie that
    /// is HttpOnly and SameSite=Strict; without a session every page sends
    /// the sign-in form; nothing of the console is on the public port.
    @Test(arguments: StoreKind.available)
    func signingIn(kind: StoreKind) async throws {
        try await SyncServer.with(kind, configure: SyncServer.withAdmin) { server in
            let browser = ConsoleBrowser(port: try #require(server.adminPort))
            let anonymous = try await browser.get("/console/users")
            #expect(anonymous.status == 303 && anonymous.location == "/console/login")

            let login = try await browser.get("/console/login")
            #expect(login.status == 200 && login.text.contains(#"<label for="token">Admin token</label>"#))
            let wrong = try await browser.post("/console/login", [("token", "not-the-admin-token-0123456789abcdef")])
            #expect(wrong.status == 401 && wrong.text.contains("not this server&#39;s admin token"))
            #expect(browser.cookies[Console.cookie] == nil)
            // A sign-in form without its token (a page elsewhere posting it) is refused even with the right password.
            #expect(try await browser.post("/console/login", [("token", AdminClient.token)], csrf: "").status == 403)
            #expect(browser.cookies[Console.cookie] == nil)

            let signedIn = try await browser.signIn(token: AdminClient.token)
            #expect(signedIn.status == 303 && signedIn.location == "/console")
            let cookie = try #require(signedIn.headers["Set-Cookie"].first { $0.hasPrefix(Console.cookie + "=") })
            #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/console"))
            let overview = try await browser.get("/console")
            #expect(overview.status == 200 && overview.text.contains("<h1>Overview</h1>"))
            #expect(overview.headers.first(name: "Content-Security-Policy")?.contains("frame-ancestors 'none'") == true)

            // The public port has no console, signed in or not.
            let outside = ConsoleBrowser(port: server.port)
            for path in ["/console", "/console/login", "/console/assets/console.css"] {
                #expect(try await outside.get(path).status == 404, "\(path)")
            }
            #expect(try await outside.post("/console/login", [("token", AdminClient.token)]).status == 404)

            try await browser.post("/console/logout", [])
            #expect(try await browser.get("/console").status == 303)
        }
    }

    /// Five wrong admin tokens from one address within a minute, and the
    /// sign-in form refuses that address, even the right token, with 429 and
    /// the wait; a session opened before keeps working.
    @Test func wrongTokensAreThrottled() async throws {
        try await SyncServer.with(.sqlite, configure: SyncServer.withAdmin) { server in
            let operator_ = ConsoleBrowser(port: try #require(server.adminPort))
            #expect(try await operator_.signIn(token: AdminClient.token).status == 303)
            let guesser = ConsoleBrowser(port: try #require(server.adminPort))
            for guess in 0..<5 {
                #expect(try await guesser.signIn(token: "guess-\(guess)-0123456789abcdef0123456789").status == 401)
            }
            let refused = try await guesser.signIn(token: AdminClient.token)
            #expect(refused.status == 429 && refused.text.contains("Too many wrong tokens"), "\(refused.text)")
            let retryAfter = try #require(refused.headers["Retry-After"].first.flatMap { Int($0) })
            #expect((55...60).contains(retryAfter))
            #expect(guesser.cookies[Console.cookie] == nil)
            #expect(try await operator_.get("/console/users").status == 200)
        }
    }

    /// Two devices of alice edit one note's title offline: the second to
    /// sync loses. The inspector shows the row's values, the overwritten
    /// value and the conflict with who and which device, in one timeline;
    /// the other pages show the same store.
    @Test(arguments: StoreKind.available)
    func everyPageShowsTheStoreAndTheInspectorTellsAConflict(kind: StoreKind) async throws {
        try await SyncServer.with(kind, configure: SyncServer.withAdmin) { server in
            let directory = try TemporaryDirectory()
            let (phone, laptop) = try await Self.twoDevicesInConflict(server, directory: directory)

            let browser = ConsoleBrowser(port: try #require(server.adminPort))
            #expect(try await browser.signIn(token: AdminClient.token).status == 303)

            // One whole blob of 3 KiB and half of another: the overview counts both and their bytes.
            let whole = Data(repeating: 7, count: 3072)
            var digest = SHA256Digest()
            digest.update(whole)
            let wholeKey = try BlobKey(scope: "user:alice", sha256: digest.finalize())
            _ = try await server.blobs.append(to: wholeKey, length: 3072, offset: 0, bytes: Self.bytes(whole))
            let halfKey = try BlobKey(scope: "user:alice", sha256: String(repeating: "ab", count: 32))
            _ = try await server.blobs.append(to: halfKey, length: 4096, offset: 0, bytes: Self.bytes(Data(count: 2048)))

            let overview = try await browser.get("/console")
            #expect(overview.text.contains("Live rows</dt><dd>1</dd>") && overview.text.contains("Devices</dt><dd>2</dd>"), "\(overview.text)")
            #expect(overview.text.contains("Attachment blobs held</dt><dd>1 (3.0 KiB)</dd>"), "\(overview.text)")
            #expect(overview.text.contains("Uploads in progress</dt><dd>1 (2.0 KiB received)</dd>"), "\(overview.text)")
            #expect(overview.text.contains("Pushes per second"))

            let users = try await browser.get("/console/users")
            #expect(users.text.contains(#"<a href="/console/users/alice">alice</a>"#))
            let alice = try await browser.get("/console/users/alice")
            #expect(alice.status == 200)
            for device in [phone, laptop] {
                let clientID = try device.database.clientID
                #expect(alice.text.contains(clientID), "\(alice.text)")
            }
            // Each device pulled from this instance and caught up.
            #expect(alice.text.components(separatedBy: "<li>user:alice: caught up").count == 3, "\(alice.text)")

            let listing = try await browser.get("/console/rows?scope=user%3Aalice&table=note")
            #expect(listing.text.contains(">n1</a>") && listing.text.contains("&quot;from the phone&quot;"))

            let laptopID = try laptop.database.clientID
            let inspector = try await browser.get("/console/rows?scope=user%3Aalice&table=note&row=n1")
            #expect(inspector.status == 200 && inspector.text.contains("<h1>Row n1</h1>"))
            // The current value, the value it replaced with its writer, and the conflict naming the loser.
            #expect(inspector.text.contains("&quot;from the phone&quot;"))
            // The value it replaced, with the device that wrote it (the phone).
            let phoneID = try phone.database.clientID
            #expect(inspector.text.contains("held &quot;groceries&quot;, later overwritten</td><td>alice:\(phoneID)</td>"), "\(inspector.text)")
            #expect(inspector.text.contains("sent &quot;from the laptop&quot;, server held &quot;from the phone&quot;; kept the server&#39;s value"))
            #expect(inspector.text.contains("alice / \(laptopID)"))
            #expect(inspector.text.contains(#"<tr class="event-conflict">"#))

            // The phone's applied title of n2 is overwritten by the laptop's newer edit, made without seeing it: a notice to alice.
            try phone.execute("INSERT INTO note(id, title) VALUES ('n2', 'plan')")
            try await phone.engine.sync()
            try await laptop.engine.sync()
            try phone.execute("UPDATE note SET title = 'phone plan' WHERE id = 'n2'")
            try await Task.sleep(for: .milliseconds(5))
            try laptop.execute("UPDATE note SET title = 'laptop plan' WHERE id = 'n2'")
            try await phone.engine.sync()
            try await laptop.engine.sync()
            let noticed = try await browser.get("/console/conflicts?user=alice&table=note")
            #expect(noticed.text.contains(#"note / <a href="/console/rows?scope=user%3Aalice&amp;table=note&amp;row=n2">n2</a>"#), "\(noticed.text)")
            #expect(noticed.text.contains("sent &quot;laptop plan&quot;, server held &quot;phone plan&quot;"))
            let n2 = try await browser.get("/console/rows?scope=user%3Aalice&table=note&row=n2")
            #expect(n2.text.contains(#"<tr class="event-notice">"#) && n2.text.contains("alice told: "))

            let conflicts = try await browser.get("/console/conflicts?user=alice&kind=column")
            #expect(conflicts.text.contains("from the laptop") && conflicts.text.contains(laptopID))
            #expect(try await browser.get("/console/conflicts?user=bob").text.contains("No conflicts or notices match."))
            #expect(try await browser.get("/console/conflicts?kind=nonsense").status == 400)

            let missing = try await browser.get("/console/rows?scope=user%3Aalice&table=note&row=nope")
            #expect(missing.status == 200 && missing.text.contains("The store holds no such row"))
            let nobody = try await browser.get("/console/users/nobody")
            #expect(nobody.status == 200 && nobody.text.contains("No device of this user has pushed"))
            #expect(try await browser.get("/console/users/no%20body").status == 400)
            // A personal scope opens too: its rows by table, no members.
            let personal = try await browser.get("/console/scopes/user%3Aalice")
            #expect(personal.status == 200 && personal.text.contains("A personal scope") && personal.text.contains("note</a></td><td>2</td>"))
            #expect(!personal.text.contains("Add a member"))

            // What a page shows of a value is text, never markup.
            try phone.execute("UPDATE note SET body = '<script>alert(1)</script>' WHERE id = 'n1'")
            try await phone.engine.sync()
            let escaped = try await browser.get("/console/rows?scope=user%3Aalice&table=note&row=n1")
            #expect(escaped.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;") && !escaped.text.contains("<script>alert"))
        }
    }

    /// A member added from the scope page can pull the scope; a form without
    /// the session's CSRF token changes nothing; removing takes access away.
    @Test(arguments: StoreKind.available)
    func aMemberAddedFromThePageCanPull(kind: StoreKind) async throws {
        try await SyncServer.with(kind, configure: SyncServer.withAdmin) { server in
            #expect(try await server.admin.send(.POST, "/admin/v1/scopes", json: #"{"scope":"trip@alice","owner":"alice"}"#).status == 201)
            let directory = try TemporaryDirectory()
            let shared: (inout SyncConfiguration) -> Void = { $0.sharedScopes = ["trip@alice"] }
            let alice = try await Device.make("alice", user: "alice", server: server, directory: directory, configure: shared)
            try alice.execute("INSERT INTO item(id, listScope, name) VALUES ('t1', 'trip@alice', 'tickets')")
            try await alice.engine.sync()
            let bob = try await Device.make("bob", user: "bob", server: server, directory: directory, configure: shared)
            #expect(try await bob.engine.sync().refusedScopes == ["trip@alice"])

            let browser = ConsoleBrowser(port: try #require(server.adminPort))
            #expect(try await browser.signIn(token: AdminClient.token).status == 303)
            let scopes = try await browser.get("/console/scopes")
            #expect(scopes.text.contains(#"<a href="/console/scopes/trip%40alice">trip@alice</a>"#))
            let page = try await browser.get("/console/scopes/trip%40alice")
            #expect(page.text.contains(#"<label for="new-member">User id</label>"#) && page.text.contains("item</a></td><td>1</td>"))

            // Without the token, or with another session's: refused, nothing changed.
            let forged = try await browser.post("/console/scopes/trip%40alice/members", [("user", "bob"), ("role", "write")], csrf: "")
            #expect(forged.status == 403 && forged.text.contains("CSRF"))
            let other = try await browser.post("/console/scopes/trip%40alice/members", [("user", "bob"), ("role", "write")], csrf: "made-up-token")
            #expect(other.status == 403)
            #expect(try await server.store.scope("trip@alice")?.members.isEmpty == true)

            let added = try await browser.post("/console/scopes/trip%40alice/members", [("user", "bob"), ("role", "read")])
            #expect(added.status == 303)
            let after = try await browser.get(try #require(added.location))
            #expect(after.text.contains("bob is now a read member."))
            // The banner says only what the server wrote: a crafted link shows nothing.
            let crafted = try await browser.get("/console/scopes/trip%40alice?done=Your+account+is+locked&user=bob")
            #expect(crafted.status == 200 && !crafted.text.contains("class=\"notice\""))
            #expect(try await server.store.scope("trip@alice")?.members == [ScopeMember(userID: "bob", role: .read)])
            #expect(try await bob.engine.sync().refusedScopes.isEmpty)
            let name = try await bob.database.read { db in try String.fetchOne(db, sql: "SELECT name FROM item WHERE id = 't1'") }
            #expect(name == "tickets")

            #expect(try await browser.post("/console/scopes/trip%40alice/members", [("user", "alice"), ("role", "read")]).status == 400)
            #expect(try await browser.post("/console/scopes/trip%40alice/members/remove", [("user", "bob")]).status == 303)
            #expect(try await server.store.scope("trip@alice")?.members.isEmpty == true)
            #expect(try await bob.engine.sync().refusedScopes == ["trip@alice"])
        }
    }

    /// A session ends after its idle timeout: pages send the sign-in form
    /// again. (The overview then reports the garbage collector's last run.)
    @Test func theSessionExpires() async throws {
        let shortSessions: (inout FerryServerConfiguration) -> Void = {
            SyncServer.withAdmin(&$0)
            $0.admin?.consoleSessionTimeout = .seconds(1)
            $0.garbageCollectionInterval = .milliseconds(200)
        }
        try await SyncServer.with(.sqlite, configure: shortSessions) { server in
            let browser = ConsoleBrowser(port: try #require(server.adminPort))
            #expect(try await browser.signIn(token: AdminClient.token).status == 303)
            #expect(try await browser.get("/console/scopes").status == 200)
            try await Task.sleep(for: .milliseconds(1500))
            let expired = try await browser.get("/console/scopes")
            #expect(expired.status == 303 && expired.location == "/console/login")
            #expect(try await browser.post("/console/logout", []).status == 303)

            // Signed in again; meanwhile the garbage collector ran, and the overview says what it did.
            #expect(try await browser.signIn(token: AdminClient.token).status == 303)
            let overview = try await browser.get("/console")
            #expect(overview.text.contains("collected 0 tombstones and 0 unreferenced blobs"), "\(overview.text)")
            #expect(overview.text.contains("Attachment blobs held</dt><dd>0 (0 bytes)</dd>"))
        }
    }

    /// On PostgreSQL, the overview of either instance lists both instances
    /// sharing the database.
    @Test func theOverviewListsEveryInstanceOnPostgreSQL() async throws {
        guard StoreKind.available.contains(.postgres) else { return }
        let database = try await PostgresTestDatabase.create()
        let first = try await SyncServer.start(store: .postgres, sharing: database, configure: SyncServer.withAdmin)
        try await first.stopping {
            let second = try await SyncServer.start(store: .postgres, sharing: database, configure: SyncServer.withAdmin)
            try await second.stopping {
                let stores = [first.store, second.store].compactMap { $0 as? PostgresSyncStore }
                #expect(stores.count == 2)
                let browser = ConsoleBrowser(port: try #require(first.adminPort))
                #expect(try await browser.signIn(token: AdminClient.token).status == 303)
                let overview = try await browser.get("/console")
                #expect(overview.text.contains("Store</dt><dd>PostgreSQL</dd>"))
                for store in stores {
                    let name = String(store.instanceName.dropFirst(PostgresSyncStore.instancePrefix.count))
                    #expect(overview.text.contains(ConsoleHTML.escape(name)), "\(name) in \(overview.text)")
                }
            }
        }
        try await database.drop()
    }
}
