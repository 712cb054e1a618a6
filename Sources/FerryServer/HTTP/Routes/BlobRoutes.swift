import FerryProtocol
import HTTPTypes
import Hummingbird
import NIOCore

/// `/v1/blobs/{scope}/{sha256}`: attachment bytes, streamed both ways and
/// never buffered whole. Authorized like the scope's rows (write to upload,
/// read to download), and before anything else: a non-member gets the same
/// 403 whether the blob exists or not.
///
/// - `HEAD`: how much the server holds (`Upload-Offset` of `Upload-Length`);
///   404 when it holds none.
/// - `PUT`: the bytes from `Upload-Offset` (default 0) of a blob of
///   `Upload-Length` bytes (default `Content-Length`): 201 once complete and
///   hashed right, 204 with the new offset when the body ended early, 409
///   with the server's offset when the upload is elsewhere, 422 when the
///   bytes hash to another name (nothing is kept).
/// - `GET`: the bytes, whole (200) or one `Range` (206).
extension SyncAPI {
    static let uploadOffset = HTTPField.Name("Upload-Offset")!
    static let uploadLength = HTTPField.Name("Upload-Length")!

    func headBlob(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let (key, role) = try await blobKey(context, needs: .read)
        // A writer may push a row naming a whole blob next, sending no bytes: the touch keeps it from the
        // collector, and tells the state after it (absent if the collector took it first). A reader's HEAD
        // only asks, so it cannot keep a blob no row names alive.
        let state = role >= .write ? try await blobs.touch(key) : try await blobs.state(of: key)
        var response: Response
        switch state {
        case .absent:
            return Response(status: .notFound)
        case .partial(let received, let length):
            response = Response(status: .ok)
            response.headers[Self.uploadOffset] = String(received)
            response.headers[Self.uploadLength] = String(length)
        case .complete(let size):
            response = Response(status: .ok)
            response.headers[Self.uploadOffset] = String(size)
            response.headers[Self.uploadLength] = String(size)
            response.headers[.contentLength] = String(size)
            response.headers[.acceptRanges] = "bytes"
            response.headers[.eTag] = "\"\(key.sha256)\""
        }
        response.headers[.cacheControl] = "no-store"
        return response
    }

    func putBlob(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let (key, _) = try await blobKey(context, needs: .write)
        let contentLength = try Self.count(request.headers[.contentLength], "Content-Length")
        let offset = try Self.count(request.headers[Self.uploadOffset], "Upload-Offset") ?? 0
        guard
            let length = try Self.count(request.headers[Self.uploadLength], "Upload-Length")
                ?? (offset == 0 ? contentLength : nil)
        else {
            throw FerryServerError.badRequest("say the blob's whole size in Upload-Length")
        }
        let limit = limits.maxBlobBytes
        guard length <= limit, (contentLength ?? 0) <= limit else {
            throw FerryServerError(.payloadTooLarge, "the blob is \(max(length, contentLength ?? 0)) bytes; the limit is \(limit)")
        }
        if let contentLength, offset + contentLength > length {
            throw FerryServerError.badRequest("\(contentLength) bytes from offset \(offset) run past Upload-Length \(length)")
        }
        if offset > 0 { metrics.recordResumedUpload() }
        let metrics = metrics
        let counted = request.body.map { buffer in
            metrics.recordBlobBytes(buffer.readableBytes, direction: "in")
            return buffer
        }
        let before = try await blobs.state(of: key)
        let state: BlobState
        do {
            state = try await blobs.append(to: key, length: length, offset: offset, bytes: counted)
        } catch let error as FerryServerError where error.code == .uploadOffsetMismatch {
            var response = ErrorMiddleware.response(for: error)
            response.headers[Self.uploadOffset] = String(try await blobs.state(of: key).offset)
            return response
        }
        var response: Response
        switch state {
        case .complete:
            if case .complete = before {
                response = Response(status: .ok)
            } else {
                response = Response(status: .created)
            }
        case .partial, .absent:
            response = Response(status: .noContent)
        }
        response.headers[Self.uploadOffset] = String(state.offset)
        response.headers[Self.uploadLength] = String(length)
        return response
    }

    func getBlob(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let (key, _) = try await blobKey(context, needs: .read)
        guard case .complete(let size) = try await blobs.state(of: key) else {
            throw FerryServerError(.notFound, "scope `\(key.scope)` has no blob \(key.sha256)")
        }
        let range: Range<Int64>
        let partial: Bool
        do {
            if let asked = try ByteRange.parse(request.headers[.range], size: size) {
                (range, partial) = (asked, true)
            } else {
                (range, partial) = (0..<size, false)
            }
        } catch {
            var response = ErrorMiddleware.response(for: error)
            response.headers[.contentRange] = "bytes */\(size)"
            return response
        }
        let bytes = try await blobs.read(key, range: range).paced(by: context.channel.eventLoop)
        let metrics = metrics
        let counted = bytes.map { buffer in
            metrics.recordBlobBytes(buffer.readableBytes, direction: "out")
            return buffer
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/octet-stream"
        headers[.contentLength] = String(range.count)
        headers[.acceptRanges] = "bytes"
        headers[.eTag] = "\"\(key.sha256)\""
        if partial {
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)"
        }
        return Response(
            status: partial ? .partialContent : .ok, headers: headers,
            body: ResponseBody(asyncSequence: counted))
    }

    /// The blob named by the path, once the caller's access to its scope is
    /// checked (first, so a refusal tells nothing of the blob).
    /// The blob a request names, and the caller's role in its scope (at least `role`).
    private func blobKey(_ context: FerryRequestContext, needs role: ScopeRole) async throws -> (BlobKey, ScopeRole) {
        let userID = try context.requireUser()
        let scope = try Self.pathParameter("scope", context)
        guard ScopeName.isValid(scope) else {
            throw FerryServerError.badRequest("scope \(MutationCheck.quoted(scope)) is not a valid scope name")
        }
        let actual = try await require(role, in: scope, for: userID, grants: context.tokenGrants)
        return (try BlobKey(scope: scope, sha256: try Self.pathParameter("sha256", context)), actual)
    }

    private static func count(_ header: String?, _ name: String) throws(FerryServerError) -> Int64? {
        guard let header else { return nil }
        guard let value = Int64(header), value >= 0 else {
            throw .badRequest("\(name) must be a byte count, not \(MutationCheck.quoted(header))")
        }
        return value
    }
}
