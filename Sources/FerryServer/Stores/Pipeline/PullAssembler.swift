import FerryProtocol

/// One conflict notice a store's notice query read.
package struct NoticeQueryRow: Sendable {
    package var id: Int64
    package var position: ChangePosition
    package var byUser: String
    package var byClient: String
    /// The stored ``StoredNotice`` JSON.
    package var json: String
    /// The store generation it was recorded in (the SQLite store's; empty otherwise).
    package var generation = ""
    /// For a settlement: the public id of the notice the user settled.
    package var settles: String? = nil

    package init(id: Int64, position: ChangePosition, byUser: String, byClient: String, json: String, generation: String = "", settles: String? = nil) {
        self.id = id
        self.position = position
        self.byUser = byUser
        self.byClient = byClient
        self.json = json
        self.generation = generation
        self.settles = settles
    }
}

/// Everything a pull does but read: where each scope starts, how a page's
/// rows and notices are cut to the limits, where its cursors point. Every
/// store reads its rows and notices in its own SQL and hands them here, so
/// pages are assembled by one rule (ARCHITECTURE.md server semantics 5 and 6).
///
/// ```swift
/// let assembler = PullAssembler(clientID: request.clientID, userID: "alice", limit: 500, maxPageBytes: 8 << 20,
///                               cursors: codec, horizon: horizon, end: end)
/// for followed in request.scopes {
///     let start = try assembler.start(of: followed)
///     var rows = assembler.pageRows()
///     …                 // the page query: up to limit + 1 rows after start.rows, appended to `rows`
///     let notices = …   // the notice query: limit + 1 notices after start.notices
///     pages.append(try assembler.page(followed.scope, start: start, rows: rows, notices: notices))
/// }
/// ```
package struct PullAssembler: Sendable {
    /// Where a scope's page starts: its rows, and its notices.
    package struct Start: Sendable {
        package var rows: PullStart
        package var notices: ChangePosition
        /// The cursor text the rows start from, checked; a page that ends
        /// where it starts hands it back rather than signing it again.
        package var cursor: String? = nil
    }

    package var clientID: String
    package var userID: String
    package var limit: Int
    package var maxPageBytes: Int
    package var cursors: PullCursorCodec
    /// The newest position of a collected tombstone: a cursor behind it gets a reset.
    package var horizon: ChangePosition
    /// The furthest position a page can reach now: a finished scope's
    /// cursor moves here, so a quiet scope never falls behind the horizon.
    package var end: ChangePosition
    /// Where a scope's notices start for a client that sends no notice
    /// cursor: where they stood when it first pushed, or, for a client that
    /// never pushed, now. A new device is not handed its user's old
    /// conflicts, which belong to the devices that saw them.
    package var noticeStart = ChangePosition.start

    package init(
        clientID: String, userID: String, limit: Int, maxPageBytes: Int, cursors: PullCursorCodec,
        horizon: ChangePosition, end: ChangePosition
    ) {
        self.clientID = clientID
        self.userID = userID
        self.limit = limit
        self.maxPageBytes = maxPageBytes
        self.cursors = cursors
        self.horizon = horizon
        self.end = end
    }

    /// How many rows and notices a store's queries read: one more than a
    /// page holds, to tell whether more follow.
    package var queryLimit: Int { limit + 1 }

    /// Where the scope's rows and notices start, from its cursors.
    ///
    /// - Throws: ``FerryServerError`` `badRequest` for a garbled or forged cursor.
    package func start(of followed: PullRequest.ScopeCursor) throws(FerryServerError) -> Start {
        var rows = PullStart.fromScratch(.firstPull)
        if let text = followed.cursor {
            rows = try PullStart(cursor: text, scope: followed.scope, codec: cursors, horizon: horizon, end: end)
        } else if let previous = followed.previous,
            (try? PullStart(cursor: previous, scope: followed.scope, codec: cursors, horizon: horizon, end: end))?.isLostHistory == true
        {
            // Started over by the client, from history this store lost. (A
            // previous cursor this store cannot read asks for nothing more.)
            rows = .fromScratch(.lostHistory)
        }
        // Notices recorded in history the store lost went with it, and the
        // ones it numbers again are new: they start over too.
        let notices = followed.notices == nil ? noticeStart : try NoticeCursor.position(from: followed.notices, epoch: cursors.epoch)
        let checked: String? = if case .after = rows { followed.cursor } else { nil }
        return Start(rows: rows, notices: rows.isLostHistory ? .start : notices, cursor: checked)
    }

    /// Rows for a page of this pull: they hold to its limits as the
    /// store's page query appends them (``EncodedRows``).
    package func pageRows() -> EncodedRows {
        EncodedRows(limit: limit, maxBytes: maxPageBytes)
    }

    /// The page of `scope` from what the store's queries read after `start`
    /// (its rows appended to ``pageRows()``). A page from scratch that holds
    /// every row counts them itself for ``EncodedPullPage/estimatedRows``;
    /// one with more to come leaves the count to the store
    /// (``needsEstimate(_:start:)``).
    package func page(_ scope: String, start: Start, rows: consuming EncodedRows, notices: [NoticeQueryRow]) throws -> EncodedPullPage {
        let hasMore = rows.hasMore
        let position = hasMore ? rows.lastPosition ?? end : end
        let kept = rows.count
        let delivered = try self.notices(notices, after: start.notices)
        return EncodedPullPage(
            scope: scope,
            rows: rows,
            cursor: cursors.encode(
                PullCursor(epoch: cursors.epoch, scope: scope, position: position.major, subposition: position.minor), reusing: start.cursor),
            hasMore: hasMore || delivered.hasMore,
            reset: start.rows.isReset,
            lostHistory: start.rows.isLostHistory,
            notices: delivered.notices,
            noticeCursor: NoticeCursor.text(delivered.position, epoch: cursors.epoch),
            settledNotices: delivered.settled,
            estimatedRows: start.rows.isFromScratch && !hasMore ? kept : nil
        )
    }

    /// Whether the store counts the scope's live rows, in the page's
    /// snapshot, for `page.estimatedRows`: the first page of a scope sent
    /// from scratch, with more rows to come. Once per first sync or reset of
    /// a scope, so a progress display knows what to expect.
    package func needsEstimate(_ page: EncodedPullPage, start: Start) -> Bool {
        start.rows.isFromScratch && page.estimatedRows == nil
    }

    /// The notices that fit the page, but those of the asking client's own
    /// overriding pushes (its reply told it already), which the cursor
    /// still passes.
    private func notices(
        _ rows: [NoticeQueryRow], after start: ChangePosition
    ) throws -> (notices: [ConflictNotice], settled: [String], position: ChangePosition, hasMore: Bool) {
        let kept = StoreCoding.pageLength(
            sizes: rows.lazy.map { $0.json.utf8.count + ($0.settles?.utf8.count ?? 0) },
            limit: limit, maxBytes: maxPageBytes)
        var position = start
        var delivered: [ConflictNotice] = []
        var settled: [String] = []
        for row in rows.prefix(kept) {
            position = row.position
            // A settlement goes to every device, its own included: dropping is idempotent, and a device whose
            // notices start over (a store that lost history) gets the notice and its settlement again.
            if let settles = row.settles {
                settled.append(settles)
            } else if row.byUser == userID, row.byClient == clientID {
                continue
            } else {
                delivered.append(try StoredNotice.decode(row.json).notice(id: row.id, epoch: cursors.epoch, generation: row.generation))
            }
        }
        return (delivered, settled, position, rows.count > kept)
    }
}
