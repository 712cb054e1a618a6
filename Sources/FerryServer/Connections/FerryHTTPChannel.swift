import FerryProtocol
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes

/// Hummingbird's HTTP/1.1 channel with Ferry's connection limits around
/// it: a connection past the cap is answered 503 and closed at once
/// (cheaply, never a spin), and every connection is under one deadline at
/// a time (``ConnectionDeadline``): idle, reading a head, reading a body.
struct FerryHTTPChannel: ServerChildChannel {
    struct Value: ServerChildChannelValue {
        let http: HTTP1Channel.Value
        let admitted: Bool
        var channel: any Channel { http.channel }
    }

    let responder: HTTPChannelHandler.Responder
    let limits: ConnectionLimits
    let open: OpenConnections
    let metrics: ServerMetrics

    /// The server builder an `Application` takes.
    static func builder(limits: ConnectionLimits, open: OpenConnections, metrics: ServerMetrics) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            FerryHTTPChannel(responder: responder, limits: limits, open: open, metrics: metrics)
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let admitted = open.open()
        let open = self.open
        let metrics = self.metrics
        channel.closeFuture.whenComplete { _ in
            open.close()
            metrics.recordOpenConnections(open.current)
        }
        metrics.recordOpenConnections(open.current)
        guard admitted else {
            metrics.recordRefusedConnection()
            return HTTP1Channel(responder: responder).setup(channel: channel, logger: logger).map { Value(http: $0, admitted: false) }
        }
        let timer: NIOLoopBound<ConnectionTimer>
        do {
            let made = ConnectionTimer(channel: channel, limits: limits) { phase in
                metrics.recordConnectionTimeout(phase: phase.rawValue)
                logger.debug("closing a connection that stayed too long", metadata: ["phase": "\(phase.rawValue)"])
            }
            timer = NIOLoopBound(made, eventLoop: channel.eventLoop)
            try channel.pipeline.syncOperations.addHandler(RawBytesWatcher(made), position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        let http = HTTP1Channel(
            responder: responder,
            configuration: .init(additionalChannelHandlers: [RequestPartsWatcher(timer.value)])
        )
        return http.setup(channel: channel, logger: logger).map { Value(http: $0, admitted: true) }
    }

    func handle(value: Value, logger: Logger) async {
        guard value.admitted else {
            await refuse(value.http, logger: logger)
            return
        }
        await HTTP1Channel(responder: responder).handle(value: value.http, logger: logger)
    }

    /// A 503 written before reading anything, then the connection closes.
    private func refuse(_ http: HTTP1Channel.Value, logger: Logger) async {
        let error = ErrorResponse(code: .unavailable, message: "the server is at its connection limit; retry shortly")
        let body = ByteBuffer(bytes: (try? JSONEncoder().encode(error)) ?? Data())
        var head = HTTPResponse(status: .serviceUnavailable)
        head.headerFields[.contentType] = "application/json; charset=utf-8"
        head.headerFields[.contentLength] = "\(body.readableBytes)"
        head.headerFields[.connection] = "close"
        head.headerFields[.retryAfter] = "1"
        do {
            try await http.executeThenClose { _, outbound in
                try await outbound.write(.head(head))
                try await outbound.write(.body(body))
                try await outbound.write(.end(nil))
            }
        } catch {
            logger.debug("a refused connection went away first", metadata: ["error": "\(error)"])
        }
    }
}
