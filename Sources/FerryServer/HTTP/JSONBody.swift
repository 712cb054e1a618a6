import FerryProtocol
import Foundation
import Hummingbird
import NIOCore

/// Reading and writing JSON bodies with the server's limits.
enum JSONResponse {
    static func make(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Wire types always encode; a failure here is a programming error.
        let data = (try? encoder.encode(value)) ?? Data(#"{"code":"internalError","message":"encoding failed"}"#.utf8)
        return Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data))
        )
    }
}

extension Request {
    /// Decodes the body as `T`, refusing bodies over the limit (413) and
    /// malformed or mistyped JSON (400) with a message saying where.
    func decodeJSON<T: Decodable>(_ type: T.Type, limits: ServerLimits) async throws -> T {
        if let length = headers[.contentLength].flatMap(Int.init), length > limits.maxBodyBytes {
            throw FerryServerError(.payloadTooLarge, "the body is \(length) bytes; the limit is \(limits.maxBodyBytes)")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await body.collect(upTo: limits.maxBodyBytes)
        } catch is NIOTooManyBytesError {
            throw FerryServerError(.payloadTooLarge, "the body is larger than the limit of \(limits.maxBodyBytes) bytes")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw FerryServerError(.badRequest, Self.describe(error))
        }
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
            return path.isEmpty ? "the body" : "`\(path)`"
        }
        switch error {
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty
                ? "the body is not valid JSON"
                : "\(path(context)): \(context.debugDescription)"
        case .keyNotFound(let key, let context):
            return "\(path(context)) is missing `\(key.stringValue)`"
        case .typeMismatch(let type, let context):
            return "\(path(context)) should be \(Self.name(of: type))"
        case .valueNotFound(let type, let context):
            return "\(path(context)) should be \(Self.name(of: type)), not null"
        @unknown default:
            return "the body does not match the expected shape"
        }
    }

    private static func name(of type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type: "an integer"
        case is Bool.Type: "a boolean"
        case is Double.Type: "a number"
        default: "\(type)"
        }
    }
}

/// The client hung up (or was cut off by a timeout) before its request body
/// was read: logged at debug level and counted as `client_closed`, never as
/// a server error.
struct ClientDisconnected: Error {
    /// nginx's "client closed request", used only inside the server.
    static let status = 499
}
