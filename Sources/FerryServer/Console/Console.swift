import FerryProtocol
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle

/// The Ferry Console: `/console` on the admin port, for the people who run
/// the server and debug sync. Signed in with the admin token (a session
/// cookie, HttpOnly and SameSite=Strict, that expires), every form carries
/// the session's CSRF token, and every page is server-rendered HTML that
/// reads without script.
struct Console: Sendable {
    let store: any SyncStore
    let blobs: any BlobStore
    let metrics: ServerMetrics
    let token: String
    let sessions: ConsoleSessions
    let now: @Sendable () -> Int64
    let heartbeat: Duration

    static let cookie = "ferry_console"
    static let loginCookie = "ferry_console_login"

    typealias Handler = @Sendable (Request, FerryRequestContext) async throws -> Response

    /// The console's routes, as the admin router registers them.
    var routes: [(HTTPRequest.Method, String, Handler)] {
        [
            (.get, "/console", page(overview)),
            (.get, "/console/login", loginForm),
            (.post, "/console/login", login),
            (.post, "/console/logout", form(logout)),
            (.get, "/console/live", live),
            (.get, "/console/users", page(users)),
            (.get, "/console/users/:user", page(user)),
            (.get, "/console/scopes", page(scopes)),
            (.get, "/console/scopes/:scope", page(scope)),
            (.post, "/console/scopes/:scope/members", form(setMember)),
            (.post, "/console/scopes/:scope/members/remove", form(removeMember)),
            (.get, "/console/rows", page(rows)),
            (.get, "/console/conflicts", page(conflicts)),
            (.get, "/console/assets/console.css", { _, _ in Self.asset(ConsoleAssets.css, type: "text/css; charset=utf-8") }),
            (.get, "/console/assets/console.js", { _, _ in Self.asset(ConsoleAssets.javascript, type: "text/javascript; charset=utf-8") }),
        ]
    }

    // MARK: Sessions

    /// A page for a signed-in operator; anyone else goes to the sign-in form.
    private func page(_ render: @escaping @Sendable (Request, FerryRequestContext, ConsoleSessionTable.Session) async throws -> ConsoleHTML) -> Handler {
        { request, context in
            guard let session = session(request) else { return Self.redirect("/console/login") }
            do {
                return Self.html(try await render(request, context, session))
            } catch let error as FerryServerError {
                return Self.html(ConsolePages.problem("Cannot show this page", error.message, csrf: session.csrf), status: .init(code: error.status))
            }
        }
    }

    /// A form post: signed in, and carrying the session's CSRF token, or refused 403.
    private func form(
        _ handle: @escaping @Sendable (ConsoleForm, FerryRequestContext, ConsoleSessionTable.Session) async throws -> Response
    ) -> Handler {
        { request, context in
            guard let session = session(request) else { return Self.redirect("/console/login") }
            let form: ConsoleForm
            do {
                form = try await Self.readForm(request)
            } catch let error as FerryServerError {
                return Self.html(ConsolePages.problem("Form refused", error.message, csrf: session.csrf), status: .init(code: error.status))
            }
            guard let csrf = form["csrf"], AdminAuthMiddleware.same(csrf, session.csrf) else {
                return Self.html(
                    ConsolePages.problem(
                        "Form refused", "The form did not carry this session's CSRF token; nothing was changed. Reload the page and try again.",
                        csrf: session.csrf), status: .forbidden)
            }
            do {
                return try await handle(form, context, session)
            } catch let error as FerryServerError {
                return Self.html(ConsolePages.problem("Not done", error.message, csrf: session.csrf), status: .init(code: error.status))
            }
        }
    }

    private func session(_ request: Request) -> ConsoleSessionTable.Session? {
        Self.cookie(Self.cookie, in: request).flatMap { sessions.session($0) }
    }

    private func loginForm(_ request: Request, context: FerryRequestContext) async throws -> Response {
        if session(request) != nil { return Self.redirect("/console") }
        return Self.loginPage(error: nil, status: .ok)
    }

    /// The sign-in form's CSRF token is a fresh random value in a cookie
    /// and in the form (double submit): a page elsewhere can send neither.
    private static func loginPage(error: String?, status: HTTPResponse.Status) -> Response {
        let token = ConsoleSessionTable.randomToken()
        var response = html(ConsolePages.login(csrf: token, error: error), status: status)
        response.headers[values: .setCookie] = ["\(loginCookie)=\(token); Path=/console/login; HttpOnly; SameSite=Strict"]
        return response
    }

    private func login(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let form: ConsoleForm
        do {
            form = try await Self.readForm(request)
        } catch let error as FerryServerError {
            return Self.loginPage(error: error.message, status: .init(code: error.status))
        }
        guard let sent = form["csrf"], let expected = Self.cookie(Self.loginCookie, in: request), AdminAuthMiddleware.same(sent, expected) else {
            return Self.loginPage(error: "The sign-in form expired or came from elsewhere; sign in again.", status: .forbidden)
        }
        let address = Self.address(of: context)
        let wait = sessions.signInWait(for: address)
        guard wait == 0 else {
            let seconds = (wait + 999) / 1000
            var response = Self.loginPage(
                error: "Too many wrong tokens from this address; try again in \(seconds) s.", status: .tooManyRequests)
            response.headers[.retryAfter] = String(seconds)
            return response
        }
        guard let given = form["token"], AdminAuthMiddleware.same(given, token) else {
            sessions.signInFailed(from: address)
            return Self.loginPage(error: "That is not this server's admin token.", status: .unauthorized)
        }
        sessions.signInSucceeded(from: address)
        let session = sessions.open()
        var response = Self.redirect("/console")
        response.headers[values: .setCookie] = [
            "\(Self.cookie)=\(session.id); Path=/console; HttpOnly; SameSite=Strict",
            "\(Self.loginCookie)=; Path=/console/login; Max-Age=0; HttpOnly; SameSite=Strict",
        ]
        return response
    }

    private func logout(_ form: ConsoleForm, context: FerryRequestContext, session: ConsoleSessionTable.Session) async throws -> Response {
        sessions.close(session.id)
        var response = Self.redirect("/console/login")
        response.headers[values: .setCookie] = ["\(Self.cookie)=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict"]
        return response
    }

    // MARK: Pages

    private func overview(_ request: Request, context: FerryRequestContext, session: ConsoleSessionTable.Session) async throws -> ConsoleHTML {
        let usage = BlobUsage(try await blobs.list(), rehashedBytes: blobs.bytesRehashed)
        return ConsolePages.overview(
            try await store.overview(), blobs: usage, garbage: metrics.latestGarbageRun(), activity: metrics.recentActivity(), now: now(),
            csrf: session.csrf)
    }

    /// The overview's live panel as server-sent events, every heartbeat,
    /// until the client leaves or the session ends.
    private func live(_ request: Request, context: FerryRequestContext) async throws -> Response {
        // Looked at, not touched: an open page (and its reconnects) does not keep a session alive.
        guard let id = Self.cookie(Self.cookie, in: request), sessions.isOpen(id) else { return Self.redirect("/console/login") }
        let (metrics, sessions, now, heartbeat) = (metrics, sessions, now, heartbeat)
        let connection = context.channel
        return Response(
            status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
            body: ResponseBody { writer in
                let (ticks, tick) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
                connection.closeFuture.whenComplete { _ in tick.finish() }
                try await withGracefulShutdownHandler {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            while !Task.isCancelled {
                                tick.yield()
                                try await Task.sleep(for: heartbeat)
                            }
                        }
                        for await _ in ticks {
                            guard sessions.isOpen(id) else {
                                try await writer.write(ByteBuffer(string: "event: signedout\ndata: \n\n"))
                                break
                            }
                            let panel = ConsolePages.activityPanel(metrics.recentActivity(), now: now()).markup
                            let data = panel.split(separator: "\n", omittingEmptySubsequences: false).map { "data: \($0)" }.joined(separator: "\n")
                            try await writer.write(ByteBuffer(string: "event: activity\n\(data)\n\n"))
                        }
                        group.cancelAll()
                    }
                } onGracefulShutdown: {
                    tick.finish()
                }
                try await writer.finish(nil)
            })
    }

    private func users(_ request: Request, context: FerryRequestContext, session: ConsoleSessionTable.Session) async throws -> ConsoleHTML {
        let after = try Self.query(request, "after")
        if let after, !ScopeName.isValidUserID(after) { throw FerryServerError.badRequest("`after` is a user id") }
        let users = try await store.users(after: after, limit: AdminAPI.defaultPage)
        return ConsolePages.users(users, next: users.count == AdminAPI.defaultPage ? users.last : nil, csrf: session.csrf)
    }

    private func user(_ request: Request, context: FerryRequestContext, session: ConsoleSessionTable.Session) async throws -> ConsoleHTML {
        let user = try SyncAPI.pathParameter("user", context)
        guard ScopeName.isValidUserID(user) else { throw FerryServerError.badRequest("\(MutationCheck.quoted(user)) is not a valid user id") }
        let devices = try await store.devices(of: user)
        return ConsolePages.user(
            user, devices: devices, pulls: metrics.devicePulls(of: user), activity: try await store.userActivity(user), csrf: session.csrf)
    }

    private func scopes(_ request: Request, context: FerryRequestContext, session: ConsoleSessionTable.Session) async throws -> ConsoleHTML {
        let after = try Self.query(request, "after")
        if let after, !ScopeName.isValid(after) { throw FerryServerError.badRequest("`after` is a scope name") }
        let scopes = try await store.scopes(after: after, limit: AdminAPI.defaultPage)
        return ConsolePages.scopes(scopes, next: scopes.count == AdminAPI.defaultPage ? scopes.last?.scope : nil, csrf: session.csrf)
    }

    private func scope(_ request: Request, context: FerryRequestContext, session: ConsoleSessionTable.Session) async throws -> ConsoleHTML {
        let scope = try AdminAPI.scopeParameter(context)
        // A personal scope has no stored row: its user owns it and no one else can be a member.
        let personal = ScopeName.owner(of: scope).map { ScopeSummary(scope: scope, owner: $0, members: []) }
        guard let summary = try await store.scope(scope) ?? personal else { throw AdminAPI.noScope(scope) }
        return ConsolePages.scope(
            summary, personal: personal != nil, contents: try await store.scopeContents(scope), csrf: session.csrf,
            notice: try Self.doneMessage(request))
    }

    private func setMember(_ form: ConsoleForm, context: FerryRequestContext, session: ConsoleSessionTable.Session) async throws -> Response {
        let (scope, user) = try await membership(form, context)
        guard let role = form["role"].flatMap(ScopeRole.init(rawValue:)) else { throw FerryServerError.badRequest("pick a role: read or write") }
        try await store.setMember(user, role: role, in: scope)
        // A role change takes effect at the members' next pull; news wakes their live streams.
        store.changeFeed.publish([scope])
        return Self.redirect(Self.scopePath(scope, done: role == .read ? "read" : "write", user: user))
    }

    private func removeMember(_ form: ConsoleForm, context: FerryRequestContext, session: ConsoleSessionTable.Session) async throws -> Response {
        let (scope, user) = try await membership(form, context)
        guard try await store.removeMember(user, from: scope) else { throw FerryServerError(.notFound, "`\(user)` is not a member of `\(scope)`") }
        store.changeFeed.publish([scope])
        return Self.redirect(Self.scopePath(scope, done: "removed", user: user))
    }

    private func membership(_ form: ConsoleForm, _ context: FerryRequestContext) async throws -> (scope: String, user: String) {
        let scope = try AdminAPI.scopeParameter(context)
        let user = (form["user"] ?? "").trimmingCharacters(in: .whitespaces)
        guard ScopeName.isValidUserID(user) else { throw FerryServerError.badRequest("\(MutationCheck.quoted(user)) is not a valid user id") }
        guard ScopeName.owner(of: scope) == nil else { throw FerryServerError(.notFound, "`\(scope)` is a personal scope: it has no members") }
        guard let summary = try await store.scope(scope) else { throw AdminAPI.noScope(scope) }
        guard summary.owner != user else { throw FerryServerError.badRequest("`\(user)` owns `\(scope)`; an owner's access cannot change") }
        return (scope, user)
    }

    private func rows(_ request: Request, context: FerryRequestContext, session: ConsoleSessionTable.Session) async throws -> ConsoleHTML {
        let scope = try Self.query(request, "scope").flatMap { $0.isEmpty ? nil : $0 }
        let table = try Self.query(request, "table").flatMap { $0.isEmpty ? nil : $0 }
        let rowID = try Self.query(request, "row").flatMap { $0.isEmpty ? nil : $0 }
        guard let scope, let table else { return ConsolePages.rows(scope: scope, table: table, listing: nil, next: nil, csrf: session.csrf) }
        try Self.check(scope: scope, table: table)
        if let rowID {
            guard MutationCheck.isRowID(rowID) else { throw FerryServerError.badRequest("a row id is 1–128 printable ASCII characters") }
            return ConsolePages.inspector(try await store.inspectRow(scope: scope, table: table, rowID: rowID), csrf: session.csrf)
        }
        let after = try Self.query(request, "after")
        if let after, !MutationCheck.isRowID(after) { throw FerryServerError.badRequest("`after` is a row id: 1–128 printable ASCII characters") }
        let listing = try await store.rows(scope: scope, table: table, after: after, changedSince: nil, limit: AdminAPI.defaultPage)
        return ConsolePages.rows(
            scope: scope, table: table, listing: listing, next: listing.count == AdminAPI.defaultPage ? listing.last?.rowID : nil, csrf: session.csrf)
    }

    private func conflicts(_ request: Request, context: FerryRequestContext, session: ConsoleSessionTable.Session) async throws -> ConsoleHTML {
        func given(_ name: String) throws -> String? { try Self.query(request, name).flatMap { $0.isEmpty ? nil : $0 } }
        var filter = ConflictFilter(userID: try given("user"), scope: try given("scope"), table: try given("table"))
        if let user = filter.userID, !ScopeName.isValidUserID(user) {
            throw FerryServerError.badRequest("\(MutationCheck.quoted(user)) is not a valid user id")
        }
        try Self.check(scope: filter.scope, table: filter.table)
        if let kind = try given("kind") {
            guard let parsed = Conflict.Kind(rawValue: kind) else { throw FerryServerError.badRequest("\(MutationCheck.quoted(kind)) is not a conflict kind") }
            filter.kind = parsed
        }
        return ConsolePages.conflicts(
            try await store.recentConflicts(filter, limit: AdminAPI.defaultPage), notices: try await store.recentNotices(filter, limit: AdminAPI.defaultPage),
            filter: filter, csrf: session.csrf)
    }

    /// Names checked before they reach a query, as the admin API checks them.
    static func check(scope: String?, table: String?) throws(FerryServerError) {
        if let scope, !ScopeName.isValid(scope) { throw .badRequest("\(MutationCheck.quoted(scope)) is not a valid scope name") }
        if let table, !MutationCheck.isIdentifier(table) { throw .badRequest("\(MutationCheck.quoted(table)) is not a valid table name") }
    }

    // MARK: HTTP

    static func html(_ page: ConsoleHTML, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: securityHeaders(type: "text/html; charset=utf-8"), body: ResponseBody(byteBuffer: ByteBuffer(string: page.markup)))
    }

    static func asset(_ text: String, type: String) -> Response {
        var headers = securityHeaders(type: type)
        headers[.cacheControl] = "private, max-age=300"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// After a form post, a 303 so a reload does not post again.
    static func redirect(_ location: String) -> Response {
        var headers = securityHeaders(type: "text/plain; charset=utf-8")
        headers[.location] = location
        return Response(status: .seeOther, headers: headers)
    }

    /// Only this server's own scripts and styles, never in a frame, never cached.
    static func securityHeaders(type: String) -> HTTPFields {
        [
            .contentType: type, .cacheControl: "no-store",
            HTTPField.Name("Content-Security-Policy")!:
                "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            HTTPField.Name("X-Content-Type-Options")!: "nosniff", HTTPField.Name("X-Frame-Options")!: "DENY",
            HTTPField.Name("Referrer-Policy")!: "no-referrer",
        ]
    }

    /// Where a member change lands: the scope's page, saying what was done
    /// by a fixed code, so a link cannot make the console show other words.
    static func scopePath(_ scope: String, done: String, user: String) -> String {
        "/console/scopes/\(ConsoleHTML.component(scope))?done=\(done)&user=\(ConsoleHTML.component(user))"
    }

    static func doneMessage(_ request: Request) throws(FerryServerError) -> String? {
        guard let done = try query(request, "done"), let user = try query(request, "user"), ScopeName.isValidUserID(user) else { return nil }
        switch done {
        case "read", "write": return "\(user) is now a \(done) member."
        case "removed": return "\(user) is no longer a member."
        default: return nil
        }
    }

    static func cookie(_ name: String, in request: Request) -> String? {
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0] == name { return String(parts[1]) }
            }
        }
        return nil
    }

    /// A query parameter given at most once.
    /// The query is read as a GET form sends it: `+` is a space.
    static func query(_ request: Request, _ name: String) throws(FerryServerError) -> String? {
        let values = ConsoleForm.pairs(request.uri.query ?? "").filter { $0.name == name }
        guard values.count <= 1 else { throw .badRequest("query parameter `\(name)` is given twice") }
        return values.first?.value
    }

    /// The peer's IP address (without its port), the sign-in throttle's key.
    static func address(of context: FerryRequestContext) -> String {
        context.channel.remoteAddress?.ipAddress ?? "unknown"
    }

    static func readForm(_ request: Request) async throws -> ConsoleForm {
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else {
            throw FerryServerError(.unsupportedMediaType, "the console takes forms as application/x-www-form-urlencoded")
        }
        let body = request.body
        let bytes: ByteBuffer
        do {
            bytes = try await body.collect(upTo: ConsoleForm.maxBytes)
        } catch {
            throw FerryServerError(.payloadTooLarge, "a console form is at most \(ConsoleForm.maxBytes) bytes")
        }
        return ConsoleForm(String(buffer: bytes))
    }
}
