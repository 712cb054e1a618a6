import Crypto
import Foundation

/// Where the server's JWT secret comes from: the flag, then the
/// `FERRY_JWT_SECRET` environment variable, then a file in the data
/// directory, generated on first start and readable only by its owner.
///
/// ```swift
/// let secret = try JWTSecret.resolve(flag: nil, environment: ProcessInfo.processInfo.environment, dataDirectory: dir)
/// print(secret.origin)   // "generated in ./ferry-data/jwt-secret"
/// ```
public struct JWTSecret: Sendable {
    /// The environment variable read when no flag is given.
    public static let environmentVariable = "FERRY_JWT_SECRET"
    /// The file name inside the data directory.
    public static let fileName = "jwt-secret"

    public var value: String
    /// Where it came from, for the startup message.
    public var origin: String

    /// - Parameters:
    ///   - flag: `--jwt-secret`, if given.
    ///   - environment: the process environment (`FERRY_JWT_SECRET`).
    ///   - dataDirectory: where the generated secret lives.
    ///   - create: generate the file when there is none (the server, on its
    ///     first start). `false` for commands that only read it (`token`): a
    ///     directory no server ever ran in is refused, not given a secret no
    ///     server will accept.
    public static func resolve(
        flag: String?, environment: [String: String], dataDirectory: URL,
        create: Bool = true
    ) throws -> JWTSecret {
        if let flag {
            try TokenAuthority.validate(secret: flag)
            return JWTSecret(value: flag, origin: "--jwt-secret")
        }
        if let value = environment[environmentVariable], !value.isEmpty {
            try TokenAuthority.validate(secret: value)
            return JWTSecret(value: value, origin: environmentVariable)
        }
        let file = dataDirectory.appending(path: fileName)
        if FileManager.default.fileExists(atPath: file.path) {
            let value = try String(contentsOf: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            try TokenAuthority.validate(secret: value)
            return JWTSecret(value: value, origin: file.path)
        }
        guard create else {
            throw FerryServerError.badRequest(
                """
                --data-dir \(dataDirectory.path) holds no \(fileName) (no ferry-server generated one there): \
                start `ferry-server serve --data-dir \(dataDirectory.path)` first, or give the secret with --jwt-secret or \(environmentVariable)
                """)
        }
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        let value = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }.base64EncodedString()
        // Created with owner-only permissions, never readable by others even briefly.
        guard
            FileManager.default.createFile(
                atPath: file.path,
                contents: Data((value + "\n").utf8),
                attributes: [.posixPermissions: 0o600]
            )
        else {
            throw FerryServerError(.internalError, "could not write the JWT secret to \(file.path)")
        }
        return JWTSecret(value: value, origin: "generated in \(file.path)")
    }
}
