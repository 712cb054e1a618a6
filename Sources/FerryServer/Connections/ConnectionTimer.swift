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

    private func apply(_ action: ConnectionDeadline.Action) {
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

/// Sees the raw bytes of a connection: its opening and each request's first byte.
final class RawBytesWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timer: ConnectionTimer

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
        context.fireChannelInactive()
    }
}

/// Sees a connection's HTTP parts: a request's head and end, a response's end.
final class RequestPartsWatcher: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let timer: ConnectionTimer

    init(_ timer: ConnectionTimer) {
        self.timer = timer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: timer.headReceived()
        case .end: timer.requestEnded()
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { timer.responseEnded() }
        context.write(data, promise: promise)
    }
}
