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
        guard parts.count == 3, let bytes = Base64URL.decode(parts[0]),
            let header = try? JSONDecoder().decode(TokenHeader.self, from: Data(bytes))
        else {
            throw FerryServerError(.unauthorized, "the token is not a JWT")
        }
        self = header
    }
}
