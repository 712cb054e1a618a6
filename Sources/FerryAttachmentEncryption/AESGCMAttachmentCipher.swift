import Crypto
import Ferry
import Foundation

/// Where the key that seals attachment files comes from — the Keychain, a
/// secure enclave, a server — never a literal in code.
///
/// ```swift
/// struct KeychainAttachmentKey: AttachmentKeyProvider {
///     func attachmentKey() throws -> Data { try Keychain.load("ferry.attachments.key") }
/// }
/// ```
public protocol AttachmentKeyProvider: Sendable {
    /// Returns the 256-bit key (32 bytes).
    func attachmentKey() throws -> Data
}

/// Seals attachment files at rest with AES-256-GCM (swift-crypto), chunk
/// by chunk: set it as `FerryConfiguration.attachmentCipher`.
///
/// Each 64 KiB chunk gets a fresh random 96-bit nonce and a 128-bit tag
/// (28 bytes more per chunk); Ferry authenticates with it the file's
/// header, the chunk's place and whether it is the last, so a changed,
/// moved or cut file is refused on read. Random nonces keep one key safe
/// for about 2³² chunks (256 TiB sealed); rotate it well before.
///
/// ```swift
/// var configuration = FerryConfiguration()
/// configuration.attachmentCipher = try AESGCMAttachmentCipher(keyProvider: KeychainAttachmentKey())
/// let database = try FerryDatabase(path: path, schema: schema, configuration: configuration)
/// try await database.attachments.add(file: scanURL, to: "visit", row: visitID)   // sealed on disk
/// let bytes = try database.attachments.data(for: scan)                            // opened and checked
/// ```
public struct AESGCMAttachmentCipher: AttachmentCipher {
    private let key: SymmetricKey

    /// A cipher with the key `keyProvider` returns (asked once, here).
    ///
    /// - throws: `FerryError` `.invalidEncryptionKey` when the
    ///   provider fails or returns anything but 32 bytes.
    public init(keyProvider: some AttachmentKeyProvider) throws {
        let key: Data
        do {
            key = try keyProvider.attachmentKey()
        } catch {
            throw FerryError(.invalidEncryptionKey, "the attachment key provider failed: \(error)")
        }
        try self.init(key: key)
    }

    /// A cipher with a 256-bit `key` (32 bytes).
    public init(key: Data) throws {
        guard key.count == 32 else {
            throw FerryError(.invalidEncryptionKey, "an attachment key must be 32 bytes (AES-256); this one is \(key.count)")
        }
        self.key = SymmetricKey(data: key)
    }

    /// The nonce (12 bytes) and the tag (16).
    public var overhead: Int { 12 + 16 }

    public func seal(_ chunk: Data, context: Data) throws -> Data {
        let box = try AES.GCM.seal(chunk, using: key, nonce: AES.GCM.Nonce(), authenticating: context)
        // `combined` is nil only for nonces not 12 bytes long.
        guard let combined = box.combined else { throw CryptoKitError.incorrectParameterSize }
        return combined
    }

    public func open(_ sealed: Data, context: Data) throws -> Data {
        try AES.GCM.open(try AES.GCM.SealedBox(combined: sealed), using: key, authenticating: context)
    }
}
