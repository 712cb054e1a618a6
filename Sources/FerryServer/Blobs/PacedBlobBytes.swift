import NIOCore

extension BlobBytes {
    /// The same bytes, each chunk read only once the connection's event loop
    /// has taken the one before: a long download holds a chunk or two in
    /// memory however fast the store reads and however late the loop runs.
    ///
    /// A response body's write hands its chunk to the event loop and returns
    /// at once while the channel is writable; the channel learns it is full
    /// only when the loop runs that write. On a busy machine the loop can run
    /// late, and a reader that does not wait queued chunk after chunk behind
    /// it: a 1 GiB download from the filesystem store went up to 160 MiB over
    /// its server's resting memory (BENCHMARKS.md, issue 34). One trip through
    /// the loop per chunk (64 KiB) orders the read after the write before it.
    ///
    /// ```swift
    /// let body = try await blobs.read(key, range: range).paced(by: context.channel.eventLoop)
    /// return Response(status: .ok, body: ResponseBody(asyncSequence: body))
    /// ```
    package func paced(by eventLoop: any EventLoop) -> BlobBytes {
        let next = nextChunk
        return BlobBytes(count: count) {
            // Runs after every task queued on the loop before it, the write of the last chunk included.
            try await eventLoop.submit {}.get()
            return try await next()
        }
    }
}
