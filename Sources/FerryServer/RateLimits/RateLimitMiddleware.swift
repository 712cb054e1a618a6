import Foundation
import Hummingbird

/// Holds each user to their ``RateLimits``: behind ``AuthMiddleware``, so
/// the user is known, and before any handler, so a request over its bucket
/// costs the server no store work. It is answered 429 with `Retry-After`.
///
/// Requests are told apart by the route they matched (never by the raw
/// path, which `//` would disguise). `POST /v1/push` takes from the push
/// bucket; every other request from the request bucket; a blob `PUT` also
/// takes its bytes (`Content-Length`, or what `Upload-Length` leaves after
/// `Upload-Offset`, at most the largest blob the server takes) from the
/// blob-byte bucket before its body is read, and a blob `GET` takes the
/// bytes it is about to send (its `Content-Length`) before the first one
/// goes. A request sent while its client was told to wait is held (at most
/// ``maxHold``) and then asked again, instead of answered at once.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = FerryRequestContext

    /// The longest a request that ignored `Retry-After` is held.
    static let maxHold = Duration.seconds(2)

    let limiter: UserRateLimiter
    let metrics: ServerMetrics
    /// The largest blob the server takes: no upload is charged more.
    let maxBlobBytes: Int64

    static let pushRoute = "/v1/push"
    static let blobRoute = "/v1/blobs/{scope}/{sha256}"

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let user = context.userID else { return try await next(request, context) }
        let route = context.endpointPath
        try await admit(request.method == .post && route == Self.pushRoute ? .push : .request, user: user)
        guard route == Self.blobRoute else { return try await next(request, context) }
        switch request.method {
        case .put:
            let bytes = min(Self.uploadBytes(request.headers), Double(maxBlobBytes))
            try await admit(.blobBytes, user: user, cost: bytes)
            return try await next(request, context)
        case .get:
            // The body streams after this returns: its bytes are taken before the first one is sent.
            let response = try await next(request, context)
            guard let bytes = response.headers[.contentLength].flatMap(Double.init), bytes > 0 else { return response }
            try await admit(.blobBytes, user: user, cost: bytes)
            return response
        default:
            return try await next(request, context)
        }
    }

    private func admit(_ kind: UserRateLimiter.Kind, user: String, cost: Double = 1) async throws {
        var decision = limiter.take(kind, user: user, cost: cost)
        if case .hold(let wait) = decision {
            metrics.recordRateLimitHold(kind.rawValue)
            try await Task.sleep(for: min(wait, Self.maxHold))
            decision = limiter.take(kind, user: user, cost: cost, mayHold: false)
        }
        guard case .refused(let retryAfter) = decision, let rate = limiter.rate(of: kind) else { return }
        metrics.recordRateLimited(kind.rawValue)
        let what =
            switch kind {
            case .push: "pushes"
            case .request: "requests"
            case .blobBytes: "attachment bytes"
            }
        throw FerryServerError(
            .tooManyRequests,
            "you sent more \(what) than this server allows one user (\(rate) a second/burst); retry in \(Self.retryAfterSeconds(retryAfter)) s",
            retryAfter: retryAfter)
    }

    /// Whole seconds for `Retry-After`, at least one.
    static func retryAfterSeconds(_ wait: Duration) -> Int {
        max(1, Int(wait.timeInterval.rounded(.up)))
    }

    /// The most a blob `PUT` can carry: its `Content-Length`, or the rest of the blob after `Upload-Offset`.
    static func uploadBytes(_ headers: HTTPFields) -> Double {
        if let length = headers[.contentLength].flatMap(Double.init) { return length }
        let whole = headers[SyncAPI.uploadLength].flatMap(Double.init) ?? 0
        let offset = headers[SyncAPI.uploadOffset].flatMap(Double.init) ?? 0
        return max(1, whole - offset)
    }
}
