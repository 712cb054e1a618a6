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
enum BlobGarbageRules {
    /// The synced table in which clients record attachments (Ferry's
    /// `ferry_attachments`), and its column naming the blob.
    static let attachmentTable = "ferry_attachments"
    static let hashColumn = "sha256"

    static func collectable(_ blobs: [StoredBlob], referenced: Set<BlobKey>, before cutoff: Date) -> [BlobKey] {
        blobs.filter { !referenced.contains($0.key) && $0.modified < cutoff }.map(\.key).sorted { $0.description < $1.description }
    }

    /// The blob an attachment row's `sha256` value names, if it is one.
    static func key(scope: String, hash: ColumnValue?) -> BlobKey? {
        guard case .text(let text)? = hash else { return nil }
        return try? BlobKey(scope: scope, sha256: text)
    }

    /// Removes the collectable blobs; returns how many.
    static func collect(store: any SyncStore, blobs: any BlobStore, before cutoff: Date) async throws -> Int {
        // Listed before the references are read: a blob named by a row pushed in between is then either
        // listed and referenced, or too new to collect.
        let stored = try await blobs.list()
        let referenced = try await store.blobReferences()
        let doomed = collectable(stored, referenced: referenced, before: cutoff)
        for key in doomed {
            try await blobs.remove(key)
        }
        return doomed.count
    }
}
