import NIOCore
import NIOHTTPTypes

/// The one timer of a connection, driven by ``ConnectionDeadline``: two
/// handlers feed it, one seeing raw bytes (a request's first byte) and one
/// seeing HTTP parts (head, end, the response's end). Lives on the
/// channel's event loop; when it fires, the connection closes.
final class ConnectionTimer {
    private var deadline: ConnectionDeadline
    private var scheduled: Scheduled<Void>?
    private let channel: any Channel
    private let onTimeout: @Sendable (ConnectionDeadline.Phase) -> Void

    init(channel: any Channel, limits: ConnectionLimits, onTimeout: @escaping @Sendable (ConnectionDeadline.Phase) -> Void) {
        self.channel = channel
        self.deadline = ConnectionDeadline(limits: limits)
        self.onTimeout = onTimeout
    }

    func connected() { apply(deadline.connected()) }
    func bytesArrived() { apply(deadline.bytesArrived()) }
    func headReceived() { apply(deadline.headReceived()) }
    func requestEnded() { apply(deadline.requestEnded()) }
    func responseEnded() { apply(deadline.responseEnded()) }

    func cancel() {
        scheduled?.cancel()
        scheduled = nil
    }

    /// Disarms the timer for good: the connection turned HTTP/2.
    func stop() {
        stopped = true
        cancel()
    }

    private var stopped = false

    private func apply(_ action: ConnectionDeadline.Action) {
        guard !stopped else { return }
        switch action {
        case .none:
            return
        case .disarm:
            cancel()
        case .arm(let after, let phase):
            cancel()
            let channel = self.channel
            let onTimeout = self.onTimeout
            scheduled = channel.eventLoop.scheduleTask(in: TimeAmount(after)) {
                onTimeout(phase)
                channel.close(promise: nil)
            }
        }
    }
}

/// Sees the raw bytes of a connection: its opening, each request's first
/// byte, and the client closing its side (a live stream ends then, not at
/// its next heartbeat's failed write).
final class RawBytesWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    let timer: ConnectionTimer
    private var inputClosed = false
    private var onInputClosed: [@Sendable () -> Void] = []

    /// Calls `callback` (on the event loop) once the client has closed its
    /// side of the connection, or at once if it has.
    func whenInputClosed(_ callback: @escaping @Sendable () -> Void) {
        if inputClosed {
            callback()
        } else {
            onInputClosed.append(callback)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed? = event as? ChannelEvent {
            inputClosed = true
            let callbacks = onInputClosed
            onInputClosed = []
            for callback in callbacks { callback() }
        }
        context.fireUserInboundEventTriggered(event)
    }

    init(_ timer: ConnectionTimer) {
        self.timer = timer
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { timer.connected() }
    }

    func channelActive(context: ChannelHandlerContext) {
        timer.connected()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        timer.bytesArrived()
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer.cancel()
        let callbacks = onInputClosed
        onInputClosed = []
        inputClosed = true
        for callback in callbacks { callback() }
        context.fireChannelInactive()
    }
}

/// Sees a connection's HTTP parts: a request's head and end, a response's end.
final class RequestPartsWatcher: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var timer: ConnectionTimer?
    private let streamLimits: ConnectionLimits?
    /// An HTTP/2 stream: it must not say `Connection: close` (HTTP/2 forbids
    /// the header), and closing it closes the stream, not the connection.
    private var isStream = false

    /// - Parameter timer: the connection's timer.
    init(_ timer: ConnectionTimer) {
        self.timer = timer
        self.streamLimits = nil
    }

    /// Finds the connection's timer in the pipeline (its ``RawBytesWatcher``'s)
    /// once added: HTTP/1.1 over TLS. An HTTP/2 stream, whose connection is
    /// on another pipeline, gets a timer of its own under `streamLimits`,
    /// which closes the stream.
    init(streamLimits: ConnectionLimits) {
        self.timer = nil
        self.streamLimits = streamLimits
    }

    func handlerAdded(context: ChannelHandlerContext) {
        guard timer == nil else { return }
        if let connection = try? context.pipeline.syncOperations.handler(type: RawBytesWatcher.self) {
            timer = connection.timer
        } else if let streamLimits {
            isStream = true
            let stream = ConnectionTimer(channel: context.channel, limits: streamLimits) { _ in }
            stream.connected()
            timer = stream
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if isStream { timer?.cancel() }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: timer?.headReceived()
        case .end: timer?.requestEnded()
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head):
            // A response that says `Connection: close` (a client over its cap) closes the connection once
            // written; on an HTTP/2 stream the header goes (HTTP/2 forbids it) and the stream closes.
            if head.headerFields[.connection]?.lowercased() == "close" {
                closeAfterResponse = true
                if isStream {
                    head.headerFields[.connection] = nil
                    context.write(wrapOutboundOut(.head(head)), promise: promise)
                    return
                }
            }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            timer?.responseEnded()
            guard closeAfterResponse else {
                context.write(data, promise: promise)
                return
            }
            let channel = context.channel
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.whenComplete { _ in channel.close(promise: nil) }
            if let promise { written.futureResult.cascade(to: promise) }
            context.writeAndFlush(data, promise: written)
        }
    }

    private var closeAfterResponse = false
}
