import FerryProtocol
import Foundation
import Hummingbird
import NIOCore

/// Turns every error into a JSON ``ErrorResponse``: input problems are 4xx
/// with a message saying what to fix; anything else is logged and answered
/// with a 500 that leaks nothing.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = FerryRequestContext

    /// Every route, to tell a wrong method (405) from a wrong path (404).
    let routes: RouteTable

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch is ClientDisconnected {
            // The client hung up mid-request: its event, not a server error. Nobody reads this answer.
            context.logger.debug("the client went away before its request was read")
            return Response(status: .init(code: ClientDisconnected.status, reasonPhrase: "Client Closed Request"))
        } catch let error as HTTPError where error.status == .notFound {
            // No route for this method: 405 when the path has others, 404 when it has none.
            let allowed = routes.methods(allowedFor: request.uri.path)
            guard !allowed.isEmpty, !allowed.contains(request.method.rawValue) else {
                return Self.response(for: Self.serverError(for: error))
            }
            var response = Self.response(
                for: FerryServerError(
                    .methodNotAllowed, "\(request.method.rawValue) is not allowed here; use \(allowed.joined(separator: " or "))"
                ))
            response.headers[.allow] = allowed.joined(separator: ", ")
            return response
        } catch {
            let failure = Self.serverError(for: error)
            if failure.code == .internalError {
                context.logger.error("request failed", metadata: ["error": "\(String(reflecting: error))"])
            }
            var response = Self.response(for: failure)
            if failure.retryAfter != nil, Self.carriesLargeBody(request) {
                // A refused upload's bytes would otherwise still be read, to keep the connection: close it instead.
                response.headers[.connection] = "close"
            }
            return response
        }
    }

    /// A body the server would rather not read only to drop: chunked, or over 64 KiB.
    static func carriesLargeBody(_ request: Request) -> Bool {
        guard let length = request.headers[.contentLength] else { return request.headers[.transferEncoding] != nil }
        return (Int(length) ?? .max) > 65_536
    }

    static func serverError(for error: any Error) -> FerryServerError {
        switch error {
        case let error as FerryServerError:
            return error
        case is NIOTooManyBytesError:
            return FerryServerError(.payloadTooLarge, "the request body is too large")
        case let error as HTTPError:
            return FerryServerError(code(for: error.status), error.body ?? error.status.reasonPhrase)
        case let error as any HTTPResponseError:
            return FerryServerError(code(for: error.status), error.status.reasonPhrase)
        default:
            return FerryServerError(.internalError, "the server failed to handle the request; its log has the details")
        }
    }

    static func code(for status: HTTPResponse.Status) -> ErrorResponse.Code {
        switch status.code {
        case 401: .unauthorized
        case 403: .forbidden
        case 404: .notFound
        case 405: .methodNotAllowed
        case 409: .alreadyExists
        case 413: .payloadTooLarge
        case 415: .unsupportedMediaType
        case 429: .tooManyRequests
        case 503: .unavailable
        case 400..<500: .badRequest
        default: .internalError
        }
    }

    static func response(for error: FerryServerError) -> Response {
        var response = JSONResponse.make(error.response, status: .init(code: error.status))
        if error.code == .unauthorized {
            response.headers[.wwwAuthenticate] = "Bearer"
        }
        if let retryAfter = error.retryAfter {
            response.headers[.retryAfter] = String(RateLimitMiddleware.retryAfterSeconds(retryAfter))
        } else if error.code == .tooManyRequests {
            // A client over its live-stream cap gives the connection back too.
            response.headers[.connection] = "close"
        }
        return response
    }
}
