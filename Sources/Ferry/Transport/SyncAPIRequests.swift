import FerryProtocol
import Foundation

/// What every HTTP transport reads the same way: the error an answer other
/// than 200 is. (Addresses come from `SyncEndpoint`.)
///
/// ```swift
/// throw SyncAPIRequests.failure(status: 409, body: data, retryAfter: nil)
/// ```
package enum SyncAPIRequests {
    /// The error an answer with `status` other than 200 is: the server's
    /// `ErrorResponse` when the body holds one, and its `Retry-After`.
    package static func failure(status: Int, body: Data?, retryAfter header: String?) -> SyncTransportError {
        let error = body.flatMap { try? JSONDecoder().decode(ErrorResponse.self, from: $0) }
        return .http(status: status, error: error, retryAfter: header.flatMap { RetryAfter.delay($0, now: Date()) })
    }

    /// What `HEAD /v1/blobs/{scope}/{sha256}` answered: the bytes the
    /// server holds (its `Upload-Offset`), or `nil` when it holds none (404).
    package static func heldBytes(
        status: Int, uploadOffset: String?, failure: () -> SyncTransportError
    ) throws(SyncTransportError) -> Int64? {
        if status == 404 { return nil }
        guard status == 200 else { throw failure() }
        guard let offset = uploadOffset.flatMap(Int64.init) else {
            throw .invalidResponse("HEAD /v1/blobs answered no Upload-Offset")
        }
        return offset
    }
}
