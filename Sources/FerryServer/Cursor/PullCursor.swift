import Crypto
import Foundation

/// Where a client is in one scope: the opaque cursor of a pull.
///
/// A cursor names the server epoch it came from, the store generation that
/// issued it (``StoreHistory``), the scope, and a position in the store's
/// change order (for the SQLite store, the version of the last change seen;
/// the PostgreSQL store uses both parts). It is signed
/// with the store's cursor key, so a forged or garbled cursor is refused
/// instead of silently skipping changes.
package struct PullCursor: Hashable, Sendable {
    package var epoch: String
    package var scope: String
    package var position: Int64
    package var subposition: Int64 = 0

    package init(epoch: String, scope: String, position: Int64, subposition: Int64 = 0) {
        self.epoch = epoch
        self.scope = scope
        self.position = position
        self.subposition = subposition
    }
}

/// Encodes and checks cursors for one store epoch. Cursors it encodes name
/// the history's current generation.
///
/// ```swift
/// let codec = PullCursorCodec(epoch: "e1", key: key)
/// let text = codec.encode(PullCursor(epoch: "e1", scope: "user:alice", position: 42))
/// let decoded = try codec.decode(text, scope: "user:alice")   // .position(42, 0, generation: "")
/// ```
package struct PullCursorCodec: Sendable {
    package let epoch: String
    package let key: SymmetricKey
    package var history: StoreHistory = .continuous

    package init(epoch: String, key: SymmetricKey, history: StoreHistory = .continuous) {
        self.epoch = epoch
        self.key = key
        self.history = history
    }

    package enum Decoded: Hashable, Sendable {
        case position(Int64, Int64, generation: String)
        /// The cursor is from another epoch of the server: the client starts over.
        case otherEpoch
    }

    package enum Invalid: Error, Equatable {
        case garbled
        case forged
        case wrongScope
    }

    /// `c2` adds the generation; a `c1` cursor (issued before generations
    /// were kept) names the empty one.
    private static let version = "c2"

    package func encode(_ cursor: PullCursor) -> String {
        let bytes = payload(cursor)
        let mac = Data(HMAC<SHA256>.authenticationCode(for: bytes, using: key))
        return Base64URL.encode(bytes) + "." + Base64URL.encode(mac)
    }

    /// `cursor` encoded, or `given` itself when it is that very text: a
    /// cursor that did not move is handed back without signing it again.
    /// `given` must have passed ``decode(_:scope:)`` (its code checked), so
    /// the same payload means the same text.
    ///
    /// ```swift
    /// let next = codec.encode(PullCursor(epoch: codec.epoch, scope: "user:alice", position: 42), reusing: request.cursor)
    /// ```
    package func encode(_ cursor: PullCursor, reusing given: String?) -> String {
        if let given, let dot = given.utf8.firstIndex(of: UInt8(ascii: ".")),
            given[..<dot].utf8.elementsEqual(Base64URL.encode(payload(cursor)).utf8)
        {
            return given
        }
        return encode(cursor)
    }

    private func payload(_ cursor: PullCursor) -> Data {
        let text = [
            Self.version, cursor.epoch, cursor.scope, String(cursor.position), String(cursor.subposition),
            history.current,
        ].joined(separator: "|")
        return Data(text.utf8)
    }

    package func decode(_ text: String, scope: String) throws(Invalid) -> Decoded {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard text.utf8.count <= 1024, parts.count == 2,
            let payload = Base64URL.decode(parts[0]),
            let mac = Base64URL.decode(parts[1]),
            let string = String(validating: payload, as: UTF8.self)
        else { throw .garbled }
        let fields = string.split(separator: "|", omittingEmptySubsequences: false)
        guard (fields.count == 5 && fields[0] == "c1") || (fields.count == 6 && fields[0] == Self.version),
            let position = Int64(fields[3]), let subposition = Int64(fields[4]),
            position >= 0, subposition >= 0
        else { throw .garbled }
        guard fields[1] == epoch else {
            // Signed with another epoch's key, which this store cannot check;
            // starting over is safe whatever the cursor says.
            return .otherEpoch
        }
        guard HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: payload, using: key) else {
            throw .forged
        }
        guard fields[2] == scope else { throw .wrongScope }
        return .position(position, subposition, generation: fields.count == 6 ? String(fields[5]) : "")
    }
}
