import FerryProtocol
import Foundation

/// Which blobs garbage collection removes: those no attachment row refers
/// to any more (no live row, and no deleted one whose tombstone is still
/// kept), last written before the tombstone retention's cutoff. The cutoff
/// also spares a blob uploaded moments before the row that names it is
/// pushed (clients send the bytes first), and collects uploads abandoned
/// halfway.
///
/// ```swift
/// let doomed = BlobGarbageRules.collectable(try await blobs.list(), referenced: try await store.blobReferences(),
///                                           before: cutoff)
/// ```
package enum BlobGarbageRules {
    /// The synced table in which clients record attachments (Ferry's
    /// `ferry_attachments`), and its column naming the blob.
    package static let attachmentTable = "ferry_attachments"
    package static let hashColumn = "sha256"

    package static func collectable(_ blobs: [StoredBlob], referenced: Set<BlobKey>, before cutoff: Date) -> [BlobKey] {
        blobs.filter { !referenced.contains($0.key) && $0.modified < cutoff }.map(\.key).sorted { $0.description < $1.description }
    }

    /// The blob an attachment row's `sha256` value names, if it is one.
    package static func key(scope: String, hash: ColumnValue?) -> BlobKey? {
        guard case .text(let text)? = hash else { return nil }
        return try? BlobKey(scope: scope, sha256: text)
    }

    /// Removes the collectable blobs; returns how many.
    ///
    /// Nothing that lands between the listing and a removal can lose a blob:
    /// a writer names a blob in a push only after a `HEAD` or upload of it,
    /// which touches it, and each removal checks, atomically with touches
    /// and appends, that the blob was not touched or written since `cutoff`
    /// (``BlobStore/remove(_:ifUntouchedSince:)``). A `HEAD` that loses the
    /// race finds the blob gone and the client uploads it again.
    ///
    /// - Parameters:
    ///   - store: the rows, whose attachment records name the blobs in use.
    ///   - blobs: the blob store.
    ///   - cutoff: blobs last written or touched before it may go.
    ///   - afterListing: tests only: runs between the listing and the removals.
    package static func collect(
        store: any SyncStore, blobs: any BlobStore, before cutoff: Date,
        afterListing: (@Sendable () async throws -> Void)? = nil
    ) async throws -> Int {
        // Listed before the references are read: a blob named by a row pushed in between is then either
        // listed and referenced, or touched since the listing.
        let stored = try await blobs.list()
        let referenced = try await store.blobReferences()
        try await afterListing?()
        var removed = 0
        for key in collectable(stored, referenced: referenced, before: cutoff) {
            if try await blobs.remove(key, ifUntouchedSince: cutoff) { removed += 1 }
        }
        return removed
    }
}
