import FerryProtocol
import Foundation

/// What every HTTP transport builds and reads the same way: the addresses
/// of `/v1/rows` and `/v1/live`, and the error an answer other than 200 is.
///
/// ```swift
/// let url = SyncAPIRequests.rowURL(base: baseURL, scope: "user:alice", table: "note", rowID: id)
/// throw SyncAPIRequests.failure(status: 409, body: data, retryAfter: nil)
/// ```
package enum SyncAPIRequests {
    /// `GET /v1/rows/{scope}/{table}/{rowID}`, each segment percent-encoded.
    package static func rowURL(base: URL, scope: String, table: String, rowID: String) -> String {
        let segments = [scope, table, rowID].map { $0.addingPercentEncoding(withAllowedCharacters: pathSegment) ?? $0 }
        var text = base.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return text + "/v1/rows/" + segments.joined(separator: "/")
    }

    /// `/v1/blobs/{scope}/{sha256}`, the scope percent-encoded.
    package static func blobURL(base: URL, scope: String, sha256: String) -> String {
        var text = base.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return text + "/v1/blobs/" + (scope.addingPercentEncoding(withAllowedCharacters: pathSegment) ?? scope) + "/" + sha256
    }

    /// `GET /v1/live` for `scopes`, asking for the rows of small changes.
    package static func liveURL(base: URL, scopes: [String]) -> URL {
        var components = URLComponents(url: base.appendingPathComponent("v1/live"), resolvingAgainstBaseURL: false)!
        components.queryItems = scopes.map { URLQueryItem(name: "scope", value: $0) } + [URLQueryItem(name: "rows", value: "true")]
        return components.url!
    }

    /// The error an answer with `status` other than 200 is: the server's
    /// `ErrorResponse` when the body holds one, and its `Retry-After`.
    package static func failure(status: Int, body: Data?, retryAfter header: String?) -> SyncTransportError {
        let error = body.flatMap { try? JSONDecoder().decode(ErrorResponse.self, from: $0) }
        return .http(status: status, error: error, retryAfter: header.flatMap { RetryAfter.delay($0, now: Date()) })
    }

    /// Unreserved characters: everything else in a path segment is percent-encoded.
    private static let pathSegment = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
