import Foundation

/// What a push tells every server instance through PostgreSQL's `NOTIFY`:
/// the transaction that committed and the scopes it changed.
///
/// A notice fits in a `NOTIFY` payload (under 8000 bytes); a push that
/// changed more scopes than fit sends several.
///
/// ```swift
/// let payloads = ChangeNotice.payloads(xid: 812, scopes: ["user:alice", "team:7"])
/// let notice = try ChangeNotice(payload: payloads[0])   // xid 812, both scopes
/// ```
package struct ChangeNotice: Codable, Hashable, Sendable {
    package var xid: Int64
    package var scopes: [String]

    package static let maxPayloadBytes = 7900

    package init(xid: Int64, scopes: [String]) {
        self.xid = xid
        self.scopes = scopes
    }

    package init(payload: String) throws {
        self = try JSONDecoder().decode(Self.self, from: Data(payload.utf8))
    }

    package var payload: String {
        String(decoding: (try? JSONEncoder().encode(self)) ?? Data(), as: UTF8.self)
    }

    /// The payloads announcing `scopes`, each under ``maxPayloadBytes``.
    package static func payloads(xid: Int64, scopes: [String], maxBytes: Int = maxPayloadBytes) -> [String] {
        var payloads: [String] = []
        var batch: [String] = []
        var bytes = 0
        for scope in scopes.sorted() {
            // JSON quoting can at most sextuple a byte (\u00XX); scope names are short.
            let size = scope.utf8.count * 6 + 3
            if !batch.isEmpty, bytes + size > maxBytes - 40 {
                payloads.append(ChangeNotice(xid: xid, scopes: batch).payload)
                batch = []
                bytes = 0
            }
            batch.append(scope)
            bytes += size
        }
        if !batch.isEmpty {
            payloads.append(ChangeNotice(xid: xid, scopes: batch).payload)
        }
        return payloads
    }
}
