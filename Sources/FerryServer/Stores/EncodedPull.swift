import FerryProtocol
import Foundation
import NIOCore

/// A pull answer as the stores read it: each page's rows kept as the JSON
/// bytes the page sends (``EncodedRows``), cut straight out of the stored
/// `cells` column as the page query reads them, so a page is read and
/// written out without decoding and re-encoding every cell. ``body()`` is
/// the body `POST /v1/pull` sends, ``json()`` the same as a string;
/// ``decoded()`` is the same answer as values, for in-process callers and
/// tests.
///
/// ```swift
/// let answer = try await store.pullEncoded(request, userID: "alice", limit: 500)
/// let body = try answer.body()      // {"lastAppliedMutationID":3,"pages":[…]}
/// let response = try answer.decoded()
/// ```
public struct EncodedPullResponse: Sendable {
    public var lastAppliedMutationID: Int64
    public var pages: [EncodedPullPage]
    /// Read before its pull asked, while the page before it was on the
    /// wire (the embedded store's read ahead): counted in
    /// `ferry_pulls_read_ahead_total`.
    package var wasReadAhead = false

    public init(lastAppliedMutationID: Int64, pages: [EncodedPullPage]) {
        self.lastAppliedMutationID = lastAppliedMutationID
        self.pages = pages
    }

    /// The rows in all pages.
    public var rowCount: Int { pages.reduce(0) { $0 + $1.rows.count } }

    /// The bytes its pages' rows hold in memory, written or reserved.
    package var heldBytes: Int { pages.reduce(0) { $0 + $1.rows.heldBytes } }

    /// The answer's JSON, as `JSONDecoder` reads a `PullResponse`.
    public func json() throws -> String {
        String(buffer: try body())
    }

    /// The answer's JSON as the bytes `POST /v1/pull` sends: written
    /// straight into one buffer, reserved for its rows before the first
    /// byte (notices and cursors may grow it once more).
    public func body() throws -> ByteBuffer {
        var out = ByteBuffer()
        out.reserveCapacity(pages.reduce(64) { $0 + $1.byteEstimate })
        out.writeStaticString("{\"lastAppliedMutationID\":")
        out.writeString(String(lastAppliedMutationID))
        out.writeStaticString(",\"pages\":[")
        for (index, page) in pages.enumerated() {
            if index > 0 { out.writeStaticString(",") }
            try page.write(to: &out)
        }
        out.writeStaticString("]}")
        return out
    }

    /// The answer with every row's values decoded.
    public func decoded() throws -> PullResponse {
        PullResponse(lastAppliedMutationID: lastAppliedMutationID, pages: try pages.map { try $0.decoded() })
    }
}

public struct EncodedPullPage: Sendable {
    public var scope: String
    /// The page's rows, already written as the JSON its `changes` array holds.
    public var rows: EncodedRows
    public var cursor: String
    public var hasMore: Bool
    public var reset: Bool
    /// The reset is because the store lost the history the cursor came from.
    public var lostHistory: Bool
    public var notices: [ConflictNotice]
    public var noticeCursor: String?
    public var settledNotices: [String]
    /// About how many rows a scope sent from scratch sends in all (see `PullPage.estimatedRows`).
    public var estimatedRows: Int?
    /// On a live page: the cursor it continues from (see `PullPage.after`).
    public var after: String?

    public init(
        scope: String, rows: EncodedRows, cursor: String, hasMore: Bool, reset: Bool, lostHistory: Bool = false,
        notices: [ConflictNotice] = [], noticeCursor: String? = nil, settledNotices: [String] = [], estimatedRows: Int? = nil,
        after: String? = nil
    ) {
        self.scope = scope
        self.rows = rows
        self.cursor = cursor
        self.hasMore = hasMore
        self.reset = reset
        self.lostHistory = lostHistory
        self.notices = notices
        self.noticeCursor = noticeCursor
        self.settledNotices = settledNotices
        self.estimatedRows = estimatedRows
        self.after = after
    }

    /// About the bytes ``write(to:)`` writes, so a buffer grows once.
    var byteEstimate: Int {
        256 + scope.utf8.count + cursor.utf8.count + rows.bytes.readableBytes
    }

    func write(to out: inout ByteBuffer) throws {
        out.writeStaticString("{")
        if let after {
            out.writeStaticString("\"after\":")
            out.writeJSONString(after)
            out.writeStaticString(",")
        }
        out.writeStaticString("\"changes\":[")
        out.writeImmutableBuffer(rows.bytes)
        out.writeStaticString("],\"cursor\":")
        out.writeJSONString(cursor)
        if let estimatedRows {
            out.writeStaticString(",\"estimatedRows\":")
            out.writeString(String(estimatedRows))
        }
        out.writeStaticString(hasMore ? ",\"hasMore\":true" : ",\"hasMore\":false")
        if lostHistory {
            out.writeStaticString(",\"lostHistory\":true")
        }
        if let noticeCursor {
            out.writeStaticString(",\"noticeCursor\":")
            out.writeJSONString(noticeCursor)
        }
        if !notices.isEmpty {
            out.writeStaticString(",\"notices\":")
            out.writeString(try StoreCoding.json(notices))
        }
        out.writeStaticString(reset ? ",\"reset\":true,\"scope\":" : ",\"reset\":false,\"scope\":")
        out.writeJSONString(scope)
        if !settledNotices.isEmpty {
            out.writeStaticString(",\"settledNotices\":[")
            for (index, id) in settledNotices.enumerated() {
                if index > 0 { out.writeStaticString(",") }
                out.writeJSONString(id)
            }
            out.writeStaticString("]")
        }
        out.writeStaticString("}")
    }

    func decoded() throws -> PullPage {
        PullPage(
            scope: scope, changes: try rows.decoded(), cursor: cursor, hasMore: hasMore, reset: reset,
            lostHistory: lostHistory, notices: notices, noticeCursor: noticeCursor, settledNotices: settledNotices,
            estimatedRows: estimatedRows, after: after
        )
    }
}
