import Hummingbird

/// Requires `Authorization: Bearer <JWT>` and puts its user in the context.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = FerryRequestContext

    let authority: TokenAuthority

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let header = request.headers[.authorization] else {
            throw FerryServerError(.unauthorized, "send a bearer token: `Authorization: Bearer <token>` (mint one with `ferry-server token --user <id>`)")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw FerryServerError(.unauthorized, "the Authorization header must be `Bearer <token>`")
        }
        var context = context
        do {
            let verified = try await authority.verify(String(parts[1]))
            (context.userID, context.tokenExpires, context.tokenGrants) = (verified.userID, verified.expires, verified.grants)
        } catch {
            // RFC 6750: a token was sent and refused. The body says why, never echoing it.
            var response = ErrorMiddleware.response(for: error)
            response.headers[.wwwAuthenticate] = #"Bearer error="invalid_token""#
            return response
        }
        return try await next(request, context)
    }
}
