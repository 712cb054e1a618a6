import Ferry
import FerryProtocol
import Foundation

/// A transport that passes every call to `inner`, with hooks on the pushes
/// and pulls a test watches, delays or fails, and on the blob transfers it
/// watches or bends: where each starts, what an upload sends, how fast its
/// progress goes.
///
/// ```swift
/// let transport = ForwardingTransport(inner, onDownload: { offset in print("a download starts at", offset) })
/// let failing = ForwardingTransport(inner, willPush: { _ in throw SyncTransportError.unreachable("offline") })
/// ```
public struct ForwardingTransport: SyncTransport {
    public let inner: any SyncTransport
    /// Told of each upload (its reader, from its offset, and the blob's
    /// size); returns the reader to send, this one or another.
    public var onUpload: @Sendable (BlobReader, Int64) throws -> BlobReader
    /// Told where each download starts.
    public var onDownload: @Sendable (Int64) -> Void
    /// Wraps each upload's progress callback.
    public var onUploadProgress: @Sendable (@escaping BlobProgress) -> BlobProgress
    /// Called with each push before it is sent; what it throws, the push throws.
    public var willPush: @Sendable (PushRequest) async throws -> Void
    /// Called with each push and the server's answer, before the answer is
    /// returned; what it throws, the push throws.
    public var didPush: @Sendable (PushRequest, PushResponse) async throws -> Void
    /// Called with each pull before it is sent; what it throws, the pull throws.
    public var willPull: @Sendable (PullRequest) async throws -> Void
    /// Told of each push that goes out prepared (`SyncTransport.preparePush(_:)`,
    /// by `inner`), before `willPush`.
    public var onPrepared: @Sendable (PreparedPush) -> Void = { _ in }

    public init(
        _ inner: any SyncTransport,
        onUpload: @escaping @Sendable (BlobReader, Int64) throws -> BlobReader = { reader, _ in reader },
        onDownload: @escaping @Sendable (Int64) -> Void = { _ in },
        onUploadProgress: @escaping @Sendable (@escaping BlobProgress) -> BlobProgress = { $0 },
        willPush: @escaping @Sendable (PushRequest) async throws -> Void = { _ in },
        didPush: @escaping @Sendable (PushRequest, PushResponse) async throws -> Void = { _, _ in },
        willPull: @escaping @Sendable (PullRequest) async throws -> Void = { _ in }
    ) {
        self.inner = inner
        self.onUpload = onUpload
        self.onDownload = onDownload
        self.onUploadProgress = onUploadProgress
        self.willPush = willPush
        self.didPush = didPush
        self.willPull = willPull
    }

    public func push(_ request: PushRequest, token: String?) async throws -> PushResponse {
        try await willPush(request)
        let response = try await inner.push(request, token: token)
        try await didPush(request, response)
        return response
    }
    public func preparePush(_ request: PushRequest) -> PreparedPush {
        inner.preparePush(request)
    }

    public func push(_ prepared: PreparedPush, token: String?) async throws -> PushResponse {
        onPrepared(prepared)
        try await willPush(prepared.request)
        let response = try await inner.push(prepared, token: token)
        try await didPush(prepared.request, response)
        return response
    }

    public func pull(_ request: PullRequest, token: String?) async throws -> PullResponse {
        try await willPull(request)
        return try await inner.pull(request, token: token)
    }
    public func row(scope: String, table: String, rowID: String, token: String?) async throws -> ServerRow? {
        try await inner.row(scope: scope, table: table, rowID: rowID, token: token)
    }
    public func live(scopes: [String], token: String?) -> AsyncThrowingStream<LiveMessage, any Error> {
        inner.live(scopes: scopes, token: token)
    }
    public func blobOffset(scope: String, sha256: String, token: String?) async throws -> Int64? {
        try await inner.blobOffset(scope: scope, sha256: sha256, token: token)
    }
    public func uploadBlob(
        scope: String, sha256: String, from reader: BlobReader, size: Int64, token: String?,
        progress: @escaping BlobProgress
    ) async throws -> Int64 {
        let sent = try onUpload(reader, size)
        return try await inner.uploadBlob(
            scope: scope, sha256: sha256, from: sent, size: size, token: token,
            progress: onUploadProgress(progress))
    }
    public func downloadBlob(
        scope: String, sha256: String, into writer: BlobWriter, token: String?,
        progress: @escaping BlobProgress
    ) async throws {
        onDownload(writer.held)
        try await inner.downloadBlob(scope: scope, sha256: sha256, into: writer, token: token, progress: progress)
    }
}
