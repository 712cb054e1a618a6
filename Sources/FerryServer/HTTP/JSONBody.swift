import FerryProtocol
import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1

/// Reading and writing JSON bodies with the server's limits.
enum JSONResponse {
    /// A response whose JSON is already written.
    static func make(json: String, status: HTTPResponse.Status = .ok) -> Response {
        make(body: ByteBuffer(string: json), status: status)
    }

    /// A response of JSON already written as bytes.
    static func make(body: ByteBuffer, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: ResponseBody(byteBuffer: body)
        )
    }

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
    /// Decodes the body as `T`, the OpenAPI document's schema `schema`:
    /// `Content-Type: application/json` (415 otherwise), no larger than the
    /// limit (413), standard JSON that matches the schema exactly (400 with
    /// a message saying where). A client that hangs up mid-body is
    /// ``ClientDisconnected``, not a server error.
    func decodeJSON<T: Decodable>(_ type: T.Type, schema: String, schemas: RequestSchemas, limits: ServerLimits) async throws -> T {
        try Self.requireJSONContentType(headers[.contentType])
        let coding = try ContentCoding(header: headers[.contentEncoding])
        if let length = headers[.contentLength].flatMap(Int.init), length > limits.maxBodyBytes {
            throw FerryServerError(.payloadTooLarge, "the body is \(length) bytes; the limit is \(limits.maxBodyBytes)")
        }
        var buffer: ByteBuffer
        do {
            buffer = try await body.collect(upTo: limits.maxBodyBytes)
        } catch is NIOTooManyBytesError {
            throw FerryServerError(.payloadTooLarge, "the body is larger than the limit of \(limits.maxBodyBytes) bytes")
        } catch is CancellationError {
            throw CancellationError()
        } catch let error as HTTPParserError where error != .invalidEOFState {
            // Still connected, just malformed (a bad chunk size): the client's fault, said as such.
            // (`invalidEOFState` is the connection ending mid-body: a hang-up.)
            throw FerryServerError.badRequest("the request body is not valid HTTP: \(error)")
        } catch {
            throw ClientDisconnected()
        }
        // A compressed body (a push from a client that compresses): the limit holds for what it decompresses to.
        if let coding { buffer = try coding.decompress(buffer, limit: limits.maxBodyBytes) }
        let bytes = Array(buffer.readableBytesView)
        // A push as every Ferry client sends it is read in one pass; anything else the general way, which
        // accepts it too or says where it breaks a rule.
        if T.self == PushRequest.self, schema == "PushRequest", let push = schemas.pushReader?.read(bytes) { return push as! T }
        let value: JSONValue
        do {
            value = try StrictJSON.parse(bytes)
        } catch {
            throw FerryServerError(.badRequest, "the body is not valid JSON: \(error)")
        }
        try schemas.validate(value, as: schema)
        if let strict = T.self as? any StrictlyDecodable.Type {
            return try strict.init(strict: value) as! T
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw FerryServerError(.badRequest, Self.describe(error))
        }
    }

    /// `application/json`, with or without parameters (a charset); any
    /// other media type, or none, is 415.
    static func requireJSONContentType(_ value: String?) throws(FerryServerError) {
        let mediaType = value?.split(separator: ";", maxSplits: 1).first?.trimmingHeaderWhitespace.lowercased()
        guard mediaType == "application/json" else {
            throw FerryServerError(
                .unsupportedMediaType,
                value.map { "the body must be application/json, not \(MutationCheck.quoted($0))" } ?? "the body must be application/json; send Content-Type: application/json"
            )
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
