import FerryProtocol
import Foundation

/// The console's pages as pure functions from what the store and the
/// metrics know to HTML: no I/O here, so each page renders in a test
/// without a socket.
/// Attachment blobs held by the blob store.
struct BlobUsage: Sendable, Hashable {
    var complete: Int
    var completeBytes: Int64
    var partial: Int
    var partialBytes: Int64
    var rehashedBytes: Int64

    init(_ held: [StoredBlob], rehashedBytes: Int64) {
        let (whole, partial) = (held.filter(\.complete), held.filter { !$0.complete })
        (complete, completeBytes) = (whole.count, whole.reduce(0) { $0 + $1.bytes })
        (self.partial, partialBytes) = (partial.count, partial.reduce(0) { $0 + $1.bytes })
        self.rehashedBytes = rehashedBytes
    }
}

enum ConsolePages {
    enum Section: String, CaseIterable {
        case overview = "Overview", users = "Users", scopes = "Scopes", rows = "Row inspector", conflicts = "Conflicts"

        var path: String {
            switch self {
            case .overview: "/console"
            case .users: "/console/users"
            case .scopes: "/console/scopes"
            case .rows: "/console/rows"
            case .conflicts: "/console/conflicts"
            }
        }
    }

    /// The frame every signed-in page shares: navigation, sign-out and the body.
    static func layout(_ title: String, section: Section?, csrf: String?, notice: String? = nil, body: ConsoleHTML) -> ConsoleHTML {
        let links = Section.allCases.map { item -> ConsoleHTML in
            let current: ConsoleHTML = item == section ? #" aria-current="page""# : ""
            return "<li><a href=\"\(item.path)\"\(current)>\(item.rawValue)</a></li>"
        }
        let signOut: ConsoleHTML =
            csrf.map { csrf in
                """
                <form method="post" action="/console/logout" class="signout"><input type="hidden" name="csrf" value="\(csrf)">\
                <button type="submit">Sign out</button></form>
                """
            } ?? ""
        let nav: ConsoleHTML = csrf == nil ? "" : "<nav aria-label=\"Console\"><ul>\(links)</ul>\(signOut)</nav>"
        let banner: ConsoleHTML = notice.map { "<p class=\"notice\" role=\"status\">\($0)</p>" } ?? ""
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(title) · Ferry Console</title><link rel="stylesheet" href="/console/assets/console.css">
            <script src="/console/assets/console.js" defer></script></head>
            <body><a class="skip" href="#main">Skip to content</a>
            <header><p class="brand">Ferry Console</p>\(nav)</header>
            <main id="main"><h1>\(title)</h1>\(banner)\(body)</main></body></html>
            """
    }

    // MARK: Sign-in

    static func login(csrf: String, error: String?) -> ConsoleHTML {
        let problem: ConsoleHTML = error.map { "<p class=\"error\" role=\"alert\" id=\"login-error\">\($0)</p>" } ?? ""
        let described: ConsoleHTML = error == nil ? "" : #" aria-describedby="login-error""#
        return layout(
            "Sign in", section: nil, csrf: nil,
            body: """
                \(problem)<form method="post" action="/console/login" class="stack">
                <input type="hidden" name="csrf" value="\(csrf)">
                <label for="token">Admin token</label>
                <input id="token" name="token" type="password" autocomplete="current-password" required\(described) autofocus>
                <p class="hint">The contents of the admin token file this server was started with.</p>
                <button type="submit">Sign in</button></form>
                """)
    }

    // MARK: Overview

    static func overview(_ store: StoreOverview, blobs: BlobUsage, garbage: GarbageRun?, activity: ActivityWindow, now: Int64, csrf: String)
        -> ConsoleHTML
    {
        let facts: [(String, String)] = [
            ("Store", store.kind), ("Schema version", store.schemaVersion), ("Size", ConsoleHTML.bytes(store.sizeBytes)),
            ("Live rows", String(store.rows)), ("Tombstones", String(store.tombstones)), ("Shared scopes", String(store.scopes)),
            ("Users", String(store.users)), ("Devices", String(store.devices)), ("Conflicts recorded", String(store.conflicts)),
            ("Conflict notices issued", String(store.notices)), ("Attachment blobs held", "\(blobs.complete) (\(ConsoleHTML.bytes(blobs.completeBytes)))"),
            ("Uploads in progress", "\(blobs.partial) (\(ConsoleHTML.bytes(blobs.partialBytes)) received)"), ("Bytes re-read to resume uploads", ConsoleHTML.bytes(blobs.rehashedBytes)),
        ]
        let collection: ConsoleHTML
        if let garbage {
            let when = ConsoleHTML.time(Int64(garbage.at.timeIntervalSince1970 * 1000))
            collection =
                garbage.error.map { "<p class=\"error\">The last run, at \(when), failed: \($0)</p>" }
                ?? "<p>The last run, at \(when), collected \(garbage.tombstones) tombstones and \(garbage.blobs) unreferenced blobs.</p>"
        } else {
            collection = "<p>No collection has run since this instance started.</p>"
        }
        let instances = store.instances.map { instance -> ConsoleHTML in
            "<tr><td>\(instance.name)</td><td>\(instance.connections)</td><td>\(ConsoleHTML.time(instance.since))</td></tr>"
        }
        let errors = activity.errors(now: now).sorted { $0.key < $1.key }.map { status, count -> ConsoleHTML in
            "<tr><td>\(status)</td><td>\(count)</td></tr>"
        }
        let errorTable: ConsoleHTML =
            errors.isEmpty
            ? "<p>No error responses in the last five minutes.</p>"
            : "<table><caption>Error responses, last five minutes</caption><thead><tr><th scope=\"col\">Status</th><th scope=\"col\">Count</th></tr></thead><tbody>\(errors)</tbody></table>"
        return layout(
            "Overview", section: .overview, csrf: csrf,
            body: """
                <section aria-labelledby="store-h"><h2 id="store-h">Store</h2>\(definitionList(facts))
                <table><caption>Server instances on this store</caption><thead><tr><th scope="col">Instance</th>\
                <th scope="col">Connections</th><th scope="col">Since</th></tr></thead><tbody>\(instances)</tbody></table></section>
                <section aria-labelledby="live-h"><h2 id="live-h">Now</h2>
                <div id="activity" data-live="/console/live">\(activityPanel(activity, now: now))</div></section>
                <section aria-labelledby="errors-h"><h2 id="errors-h">Errors</h2>\(errorTable)</section>
                <section aria-labelledby="gc-h"><h2 id="gc-h">Garbage collection</h2>\(collection)</section>
                """)
    }

    /// The live part of the overview; the page's script replaces it with
    /// each server-sent event, and without script a reload does.
    static func activityPanel(_ activity: ActivityWindow, now: Int64) -> ConsoleHTML {
        let pushes = activity.series(.push, now: now), pulls = activity.series(.pull, now: now)
        return """
            <p><span>Live subscribers: <strong>\(activity.liveSubscribers)</strong></span> · \
            <span>Open connections: <strong>\(activity.openConnections)</strong></span></p>
            <div class="charts">\
            \(ConsoleChart.line(pushes.map(\.perSecond), title: "Pushes per second"))\
            \(ConsoleChart.line(pushes.map(\.p50), title: "Push p50", unit: " ms"))\
            \(ConsoleChart.line(pushes.map(\.p99), title: "Push p99", unit: " ms"))\
            \(ConsoleChart.line(pulls.map(\.perSecond), title: "Pulls per second"))\
            \(ConsoleChart.line(pulls.map(\.p50), title: "Pull p50", unit: " ms"))\
            \(ConsoleChart.line(pulls.map(\.p99), title: "Pull p99", unit: " ms"))</div>
            <p class="hint">Ten-second buckets over the last five minutes, this instance only.</p>
            """
    }

    // MARK: Users and devices

    static func users(_ users: [String], next: String?, csrf: String) -> ConsoleHTML {
        let items = users.map { user -> ConsoleHTML in "<li><a href=\"/console/users/\(ConsoleHTML.component(user))\">\(user)</a></li>" }
        let more: ConsoleHTML = next.map { "<p><a href=\"/console/users?after=\(ConsoleHTML.component($0))\">Next page</a></p>" } ?? ""
        let list: ConsoleHTML = users.isEmpty ? "<p>No device has pushed yet.</p>" : "<ul class=\"list\">\(items)</ul>"
        return layout("Users", section: .users, csrf: csrf, body: "<p>Every user with a device that pushed.</p>\(list)\(more)")
    }

    static func user(_ userID: String, devices: [DeviceSummary], pulls: [String: DevicePulls.Pull], activity: UserActivity, csrf: String)
        -> ConsoleHTML
    {
        let rows = devices.map { device -> ConsoleHTML in
            let setAside = activity.rejectionsByDevice[device.clientID] ?? 0
            let pull = pulls[device.clientID]
            let scopes = (pull?.pages ?? []).map { page -> ConsoleHTML in
                let rows = page.rows == 1 ? "1 row" : "\(page.rows) rows"
                let state = page.hasMore ? "behind: \(rows) sent, more waiting" : "caught up (\(rows) sent)"
                return "<li>\(page.scope): \(state)</li>"
            }
            return """
                <tr><td><code>\(device.clientID)</code></td><td>\(device.lastMutationID)</td>\
                <td>\(ConsoleHTML.time(device.lastPushAt))</td><td>\(ConsoleHTML.time(pull?.at))</td>\
                <td>\(scopes.isEmpty ? ConsoleHTML("—") : "<ul class=\"list\">\(scopes)</ul>")</td><td>\(setAside)</td></tr>
                """
        }
        let scopes = activity.scopes.map { scope -> ConsoleHTML in "<li><a href=\"/console/scopes/\(ConsoleHTML.component(scope))\">\(scope)</a></li>" }
        let deviceTable: ConsoleHTML =
            devices.isEmpty
            ? "<p>No device of this user has pushed to this server.</p>"
            : """
            <table><caption>Devices</caption><thead><tr><th scope="col">Device (client id)</th><th scope="col">Last mutation applied</th>\
            <th scope="col">Last push</th><th scope="col">Last pull (this instance)</th><th scope="col">Scopes at that pull</th>\
            <th scope="col">Mutations set aside (rejected)</th></tr></thead><tbody>\(rows)</tbody></table>
            """
        return layout(
            "User \(userID)", section: .users, csrf: csrf,
            body: """
                \(definitionList([("Conflict notices issued to this user", String(activity.notices)), ("Personal scope", ScopeName.userPrefix + userID)]))
                <p><a href="/console/scopes/\(ConsoleHTML.component(ScopeName.userPrefix + userID))">The personal scope's rows</a></p>
                \(deviceTable)
                <h2>Shared scopes</h2>\(scopes.isEmpty ? ConsoleHTML("<p>None.</p>") : "<ul class=\"list\">\(scopes)</ul>")
                <p><a href="/console/conflicts?user=\(ConsoleHTML.component(userID))">This user's conflicts</a></p>
                """)
    }

    // MARK: Scopes

    static func scopes(_ scopes: [ScopeSummary], next: String?, csrf: String) -> ConsoleHTML {
        let rows = scopes.map { scope -> ConsoleHTML in
            """
            <tr><td><a href="/console/scopes/\(ConsoleHTML.component(scope.scope))">\(scope.scope)</a></td>\
            <td>\(scope.owner ?? "—")</td><td>\(scope.members.count)</td></tr>
            """
        }
        let more: ConsoleHTML = next.map { "<p><a href=\"/console/scopes?after=\(ConsoleHTML.component($0))\">Next page</a></p>" } ?? ""
        return layout(
            "Scopes", section: .scopes, csrf: csrf,
            body: """
                <table><caption>Shared scopes</caption><thead><tr><th scope="col">Scope</th><th scope="col">Owner</th>\
                <th scope="col">Members</th></tr></thead><tbody>\(rows)</tbody></table>\(more)
                """)
    }

    static func scope(_ summary: ScopeSummary, personal: Bool = false, contents: ScopeContents, csrf: String, notice: String?) -> ConsoleHTML {
        let action = "/console/scopes/\(ConsoleHTML.component(summary.scope))/members"
        let members = summary.members.map { member -> ConsoleHTML in
            let options = ScopeRole.allCases.map { role -> ConsoleHTML in
                "<option value=\"\(role.rawValue)\"\(ConsoleHTML(markup: role == member.role ? " selected" : ""))>\(role.rawValue)</option>"
            }
            let id = "role-\(member.userID)"
            return """
                <tr><td><a href="/console/users/\(ConsoleHTML.component(member.userID))">\(member.userID)</a></td><td>\
                <form method="post" action="\(action)" class="inline"><input type="hidden" name="csrf" value="\(csrf)">\
                <input type="hidden" name="user" value="\(member.userID)"><label class="visually-hidden" for="\(id)">Role of \(member.userID)</label>\
                <select id="\(id)" name="role">\(options)</select><button type="submit">Change</button></form></td><td>\
                <form method="post" action="\(action)/remove" class="inline"><input type="hidden" name="csrf" value="\(csrf)">\
                <input type="hidden" name="user" value="\(member.userID)"><button type="submit" class="danger">Remove \(member.userID)</button></form></td></tr>
                """
        }
        let tables = contents.tables.sorted { $0.key < $1.key }.map { table, count -> ConsoleHTML in
            """
            <tr><td><a href="/console/rows?scope=\(ConsoleHTML.component(summary.scope))&amp;table=\(ConsoleHTML.component(table))">\(table)</a></td>\
            <td>\(count)</td></tr>
            """
        }
        let membership: ConsoleHTML = """
                <table><caption>Members</caption><thead><tr><th scope="col">User</th><th scope="col">Role</th><th scope="col">Remove</th></tr></thead>
                <tbody>\(members.isEmpty ? ConsoleHTML("<tr><td colspan=\"3\">No members yet: only the owner can use this scope.</td></tr>") : "\(members)")</tbody></table>
                <form method="post" action="\(action)" class="stack"><h2>Add a member</h2><input type="hidden" name="csrf" value="\(csrf)">
                <label for="new-member">User id</label><input id="new-member" name="user" required>
                <label for="new-role">Role</label><select id="new-role" name="role"><option value="read">read</option>\
                <option value="write">write</option></select><button type="submit">Add member</button></form>
            """
        return layout(
            "Scope \(summary.scope)", section: .scopes, csrf: csrf, notice: notice,
            body: """
                \(definitionList([("Owner", summary.owner ?? "none (created by an administrator)"), ("Last change", ConsoleHTML.time(contents.lastChangedAt))]))
                \(personal ? ConsoleHTML("<p>A personal scope: only its user reads and writes it, and it has no members.</p>") : membership)
                <table><caption>Live rows by table</caption><thead><tr><th scope="col">Table</th><th scope="col">Rows</th></tr></thead>
                <tbody>\(tables)</tbody></table>
                """)
    }

    // MARK: Rows

    static func rowSearch(scope: String?, table: String?, rowID: String?) -> ConsoleHTML {
        """
        <form method="get" action="/console/rows" class="stack search"><h2>Find a row</h2>
        <label for="scope">Scope</label><input id="scope" name="scope" value="\(scope)" required>
        <label for="table">Table</label><input id="table" name="table" value="\(table)" required>
        <label for="row">Row id (empty: list the table)</label><input id="row" name="row" value="\(rowID)">
        <button type="submit">Look up</button></form>
        """
    }

    static func rows(scope: String?, table: String?, listing: [ListedRow]?, next: String?, csrf: String) -> ConsoleHTML {
        var body = rowSearch(scope: scope, table: table, rowID: nil)
        if let listing, let scope, let table {
            let rows = listing.map { row -> ConsoleHTML in
                let link = "/console/rows?scope=\(ConsoleHTML.component(scope))&table=\(ConsoleHTML.component(table))&row=\(ConsoleHTML.component(row.rowID))"
                let values = row.values.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value.display)" }.joined(separator: ", ")
                return "<tr><td><a href=\"\(link)\">\(row.rowID)</a></td><td>\(row.version)</td><td class=\"values\">\(values)</td></tr>"
            }
            let more: ConsoleHTML =
                next.map {
                    "<p><a href=\"/console/rows?scope=\(ConsoleHTML.component(scope))&amp;table=\(ConsoleHTML.component(table))&amp;after=\(ConsoleHTML.component($0))\">Next page</a></p>"
                } ?? ""
            body = """
                \(body)<table><caption>Rows of \(table) in \(scope)</caption><thead><tr><th scope="col">Row id</th>\
                <th scope="col">Version</th><th scope="col">Values</th></tr></thead><tbody>\(rows)</tbody></table>\(more)
                """
        }
        return layout("Row inspector", section: .rows, csrf: csrf, body: body)
    }

    /// One row's whole story: where did my edit go.
    static func inspector(_ story: RowInspection, csrf: String) -> ConsoleHTML {
        let state: ConsoleHTML
        if let current = story.current {
            let cells = current.cells.map { cell -> ConsoleHTML in
                """
                <tr><td>\(cell.column)</td><td class="values">\(cell.value.display)</td><td>\(cell.version)</td>\
                <td><code>\(cell.clientID)</code></td><td>\(ConsoleHTML.time(cell.wallMilliseconds))</td></tr>
                """
            }
            let status =
                current.deleted
                ? (current.collected ? "deleted; its tombstone was collected into a deletion record" : "deleted (tombstone)") : "live"
            state = """
                \(definitionList([("Status", status), ("Version", String(current.version)), ("Last written by device", current.clientID), ("Changed", ConsoleHTML.time(current.changedAt))]))
                <table><caption>Current values</caption><thead><tr><th scope="col">Column</th><th scope="col">Value</th>\
                <th scope="col">Version</th><th scope="col">Device</th><th scope="col">Writer's clock</th></tr></thead><tbody>\(cells)</tbody></table>
                """
        } else {
            state = "<p>The store holds no such row: it was never pushed to this server, or it is in another scope or table.</p>"
        }
        let events = story.timeline.map { event -> ConsoleHTML in
            """
            <tr class="event-\(event.kind.rawValue)"><td>\(event.version.map(String.init) ?? "—")</td><td>\(event.kind.rawValue)</td>\
            <td>\(event.column ?? "—")</td><td class="values">\(event.summary)</td><td>\(event.writer ?? "—")</td>\
            <td>\(ConsoleHTML.time(event.at))</td></tr>
            """
        }
        return layout(
            "Row \(story.rowID)", section: .rows, csrf: csrf,
            body: """
                <p>Table <code>\(story.table)</code> in scope <a href="/console/scopes/\(ConsoleHTML.component(story.scope))">\(story.scope)</a>.</p>
                \(state)
                <table class="timeline"><caption>Timeline: every value, conflict, notice and rejection, by version</caption><thead><tr>\
                <th scope="col">Version</th><th scope="col">Event</th><th scope="col">Column</th><th scope="col">What happened</th>\
                <th scope="col">Who (user / device)</th><th scope="col">When</th></tr></thead><tbody>\(events)</tbody></table>
                <p class="hint">Overwritten values are kept while a conflict may still need them; the writer of one is \
                known while the server keeps its mutation's result.</p>
                \(rowSearch(scope: story.scope, table: story.table, rowID: story.rowID))
                """)
    }

    // MARK: Conflicts

    static func conflicts(_ conflicts: [InspectedConflict], notices: [InspectedNotice], filter: ConflictFilter, csrf: String) -> ConsoleHTML {
        let kinds = ([nil] + Conflict.Kind.allCases.map(Optional.some)).map { kind -> ConsoleHTML in
            let selected = ConsoleHTML(markup: kind == filter.kind ? " selected" : "")
            return "<option value=\"\(kind?.rawValue ?? "")\"\(selected)>\(kind?.rawValue ?? "any")</option>"
        }
        let rows = conflicts.map { conflict -> ConsoleHTML in
            let link =
                "/console/rows?scope=\(ConsoleHTML.component(conflict.scope))&table=\(ConsoleHTML.component(conflict.table))&row=\(ConsoleHTML.component(conflict.rowID))"
            return """
                <tr><td>\(ConsoleHTML.time(conflict.createdAt))</td><td>\(conflict.userID)</td><td><code>\(conflict.clientID)</code></td>\
                <td>\(conflict.scope)</td><td>\(conflict.table)</td><td><a href="\(link)">\(conflict.rowID)</a></td>\
                <td>\(conflict.conflict.kind.rawValue)</td><td class="values">\(conflict.conflict.summary)</td></tr>
                """
        }
        let noticeRows = notices.map { notice -> ConsoleHTML in
            let row: ConsoleHTML =
                notice.table.flatMap { table in
                    notice.rowID.map { rowID -> ConsoleHTML in
                        let link =
                            "/console/rows?scope=\(ConsoleHTML.component(notice.scope))&table=\(ConsoleHTML.component(table))&row=\(ConsoleHTML.component(rowID))"
                        return "\(table) / <a href=\"\(link)\">\(rowID)</a>"
                    }
                } ?? "—"
            return """
                <tr><td>\(ConsoleHTML.time(notice.createdAt))</td><td>\(notice.userID)</td><td>\(notice.byUser) / <code>\(notice.byClient)</code></td>\
                <td>\(notice.scope)</td><td>\(row)</td><td class="values">\(notice.conflict?.summary ?? "a value was discarded")</td></tr>
                """
        }
        return layout(
            "Conflicts and notices", section: .conflicts, csrf: csrf,
            body: """
                <form method="get" action="/console/conflicts" class="filters">
                <span class="field"><label for="f-user">User</label><input id="f-user" name="user" value="\(filter.userID)"></span>
                <span class="field"><label for="f-scope">Scope</label><input id="f-scope" name="scope" value="\(filter.scope)"></span>
                <span class="field"><label for="f-table">Table</label><input id="f-table" name="table" value="\(filter.table)"></span>
                <span class="field"><label for="f-kind">Kind</label><select id="f-kind" name="kind">\(kinds)</select></span>
                <button type="submit">Filter</button></form>
                \(conflicts.isEmpty && notices.isEmpty ? ConsoleHTML("<p>No conflicts or notices match.</p>") : "")
                <table><caption>Latest conflicts, newest first</caption><thead><tr><th scope="col">When</th><th scope="col">User</th>\
                <th scope="col">Device</th><th scope="col">Scope</th><th scope="col">Table</th><th scope="col">Row</th>\
                <th scope="col">Kind</th><th scope="col">What happened</th></tr></thead><tbody>\(rows)</tbody></table>
                <table><caption>Latest conflict notices (a user's applied value a later write discarded), newest first</caption><thead><tr>\
                <th scope="col">When</th><th scope="col">User told</th><th scope="col">Overridden by (user / device)</th>\
                <th scope="col">Scope</th><th scope="col">Row</th><th scope="col">What happened</th></tr></thead><tbody>\(noticeRows)</tbody></table>
                """)
    }

    // MARK: Parts

    static func definitionList(_ facts: [(String, String)]) -> ConsoleHTML {
        let items = facts.map { name, value -> ConsoleHTML in "<div><dt>\(name)</dt><dd>\(value)</dd></div>" }
        return "<dl class=\"facts\">\(items)</dl>"
    }

    static func problem(_ title: String, _ message: String, csrf: String?) -> ConsoleHTML {
        layout(title, section: nil, csrf: csrf, body: "<p class=\"error\" role=\"alert\">\(message)</p><p><a href=\"/console\">Back to the overview</a></p>")
    }
}
