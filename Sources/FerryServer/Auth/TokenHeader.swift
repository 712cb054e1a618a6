import FerryProtocol
import Foundation

/// The fields of a JWT's header the server decides on before any signature
/// check: its algorithm and its key.
///
/// ```swift
/// let header = try TokenHeader(of: token)   // alg "ES256", kid "2024-06"
/// ```
struct TokenHeader: Decodable, Sendable {
    var alg: String?
    var kid: String?

    /// - Throws: ``FerryServerError`` `unauthorized` when `token` is not
    ///   three dot-separated parts with a JSON header.
    init(of token: String) throws(FerryServerError) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Self.base64URLDecoded(parts[0]),
            let header = try? JSONDecoder().decode(TokenHeader.self, from: data)
        else {
            throw FerryServerError(.unauthorized, "the token is not a JWT")
        }
        self = header
    }

    private static func base64URLDecoded(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
