import Foundation

/// Seals attachment files at rest: an authenticated cipher (AES-GCM in
/// `FerryAttachmentEncryption`) that Ferry applies to each 64 KiB chunk of
/// every attachment file it writes, and checks on every chunk it reads.
///
/// Ferry frames the file (a header naming it, then the chunks) and binds
/// each chunk to its file, its place and whether it is the last one through
/// `context`; the cipher only seals and opens. So a chunk changed, moved,
/// swapped in from another file, or cut off the end is refused on read, and
/// such a file's bytes are never returned.
///
/// ```swift
/// import FerryAttachmentEncryption
///
/// var configuration = FerryConfiguration()
/// configuration.attachmentsDirectory = documents.appending(path: "attachments")
/// configuration.attachmentCipher = try AESGCMAttachmentCipher(keyProvider: KeychainAttachmentKey())
/// ```
///
/// Set it when the attachments directory is first used: Ferry records there
/// whether its files are sealed, and refuses to open the directory the other
/// way (files written in one form cannot be read in the other).
public protocol AttachmentCipher: Sendable {
    /// How many bytes sealing adds to a chunk (its nonce and tag, say).
    var overhead: Int { get }
    /// Seals `chunk`, authenticating `context` with it. The result is
    /// exactly `chunk.count + overhead` bytes. One context may be sealed
    /// more than once (a download continued after a crash seals its last
    /// chunk again), so every call must use a fresh nonce, never one
    /// derived from `context`.
    func seal(_ chunk: Data, context: Data) throws -> Data
    /// Opens what ``seal(_:context:)`` returned, or throws if it, or
    /// `context`, is not what was sealed.
    func open(_ sealed: Data, context: Data) throws -> Data
}
