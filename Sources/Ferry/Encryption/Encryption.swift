import FerrySQLite
import GRDB

/// Applies a SQLCipher key to a connection before anything else touches the
/// file, and proves the key took effect.
///
/// SQLite without a codec silently ignores `PRAGMA key`, which would leave the
/// database in clear text. So after keying, Ferry asks for
/// `PRAGMA cipher_version`: no answer means no codec, and opening fails.
enum Encryption {
    static func apply(_ provider: any DatabaseKeyProvider, to db: Database) throws {
        let key: DatabaseKey
        do {
            key = try provider.databaseKey()
        } catch {
            throw FerryError(.invalidEncryptionKey, "the encryption key provider failed: \(error)")
        }
        // PRAGMA arguments cannot be bound parameters; the key is quoted as a literal.
        let pragmaArgument: String
        switch key {
        case .passphrase(let passphrase):
            guard !passphrase.isEmpty else {
                throw FerryError(.invalidEncryptionKey, "the encryption key provider returned an empty passphrase")
            }
            pragmaArgument = SQLText.literal(passphrase)
        case .raw(let bytes):
            guard bytes.count == 32 else {
                throw FerryError(
                    .invalidEncryptionKey,
                    "a raw SQLCipher key must be 32 bytes; the key provider returned \(bytes.count)")
            }
            let hex = bytes.map { String(format: "%02x", $0) }.joined()
            pragmaArgument = "\"x'\(hex)'\""
        }
        try db.execute(sql: "PRAGMA key = \(pragmaArgument)")
        let cipherVersion = try String.fetchOne(db, sql: "PRAGMA cipher_version")
        guard let cipherVersion, !cipherVersion.isEmpty else {
            let sqliteVersion = (try? String.fetchOne(db, sql: "SELECT sqlite_version()")) ?? "unknown"
            throw FerryError(
                .encryptionUnavailable,
                """
                encryption was requested but the linked SQLite (\(sqliteVersion)) has no codec: \
                `PRAGMA cipher_version` returned nothing, so the database would be stored unencrypted. \
                Link SQLCipher (see README, "Encryption at rest"), or open without `encryption`.
                """)
        }
    }
}
