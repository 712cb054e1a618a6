import Crypto
import Foundation
import Hummingbird

/// Requires `Authorization: Bearer <admin token>` on the admin port. The
/// comparison takes the same time wherever the tokens differ.
struct AdminAuthMiddleware: RouterMiddleware {
    typealias Context = FerryRequestContext

    let token: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let parts = request.headers[.authorization]?.split(separator: " ", maxSplits: 1) ?? []
        guard parts.count == 2, parts[0].lowercased() == "bearer", Self.same(String(parts[1]), token) else {
            var response = ErrorMiddleware.response(
                for: FerryServerError(.unauthorized, "send the admin credential: `Authorization: Bearer <contents of the admin token file>`"))
            response.headers[.wwwAuthenticate] = #"Bearer realm="ferry-admin""#
            return response
        }
        return try await next(request, context)
    }

    /// Compares digests, so neither length nor a common prefix shows in the time taken.
    static func same(_ given: String, _ expected: String) -> Bool {
        let a = Data(SHA256.hash(data: Data(given.utf8))), b = Data(SHA256.hash(data: Data(expected.utf8)))
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
