import Foundation

/// A SQLCipher key, as a passphrase or as 32 raw bytes.
public enum DatabaseKey: Sendable, Hashable {
    /// A passphrase SQLCipher derives the key from (PBKDF2).
    case passphrase(String)
    /// A 256-bit key used as is, skipping key derivation.
    case raw(Data)
}

/// Where the encryption key of a database comes from — the Keychain, a
/// secure enclave, a server — never a literal in code.
///
/// ```swift
/// struct KeychainKey: DatabaseKeyProvider {
///     func databaseKey() throws -> DatabaseKey {
///         .raw(try Keychain.load("ferry.db.key"))
///     }
/// }
/// var configuration = FerryConfiguration()
/// configuration.encryption = KeychainKey()
/// ```
public protocol DatabaseKeyProvider: Sendable {
    /// Returns the key. Called each time a connection opens.
    func databaseKey() throws -> DatabaseKey
}
