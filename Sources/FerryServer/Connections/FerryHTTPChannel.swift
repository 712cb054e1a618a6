import FerryProtocol
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import HummingbirdHTTP2
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes
import NIOSSL

/// Hummingbird's HTTP channel with Ferry's connection limits around it: a
/// connection past the cap is answered 503 and closed at once (cheaply,
/// never a spin), and every connection is under one deadline at a time
/// (``ConnectionDeadline``): idle, reading a head, reading a body.
///
/// With ``ServerTLS``, connections are TLS and choose HTTP/2 or HTTP/1.1 by
/// ALPN (Hummingbird's `HTTP2UpgradeChannel`, built again after each
/// reload of the certificate). HTTP/1.1 over TLS keeps the deadlines; an
/// HTTP/2 connection leaves them for HTTP/2's idle timeout once it has
/// chosen. A TLS connection past the cap is closed without a handshake.
struct FerryHTTPChannel: ServerChildChannel {
    enum Value: ServerChildChannelValue {
        case plain(HTTP1Channel.Value, admitted: Bool)
        case secure(HTTP2UpgradeChannel.Value, HTTP2UpgradeChannel)
        case refused(any Channel)

        var channel: any Channel {
            switch self {
            case .plain(let http, _): http.channel
            case .secure(let value, _): value.channel
            case .refused(let channel): channel
            }
        }
    }

    let responder: HTTPChannelHandler.Responder
    let limits: ConnectionLimits
    let open: OpenConnections
    let metrics: ServerMetrics
    let tls: SecureChannels?

    /// The server builder an `Application` takes.
    static func builder(limits: ConnectionLimits, open: OpenConnections, metrics: ServerMetrics, tls: ServerTLS? = nil) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            FerryHTTPChannel(
                responder: responder, limits: limits, open: open, metrics: metrics,
                tls: tls.map { SecureChannels(tls: $0, limits: limits, responder: responder) })
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        if let tls { return setupSecure(channel: channel, tls: tls, logger: logger) }
        let admitted = open.open()
        countUntilClosed(channel)
        guard admitted else {
            metrics.recordRefusedConnection()
            return HTTP1Channel(responder: responder).setup(channel: channel, logger: logger).map { .plain($0, admitted: false) }
        }
        let timer: NIOLoopBound<ConnectionTimer>
        do {
            timer = NIOLoopBound(try watchDeadlines(of: channel, logger: logger), eventLoop: channel.eventLoop)
        } catch {
            return Self.failed(channel, error)
        }
        let http = HTTP1Channel(
            responder: responder,
            configuration: .init(additionalChannelHandlers: [RequestPartsWatcher(timer.value)])
        )
        return http.setup(channel: channel, logger: logger).map { .plain($0, admitted: true) }
    }

    /// TLS, then HTTP/2 or HTTP/1.1 as the client chose, under the same cap
    /// and, until a connection turns HTTP/2, the same deadlines.
    private func setupSecure(channel: any Channel, tls: SecureChannels, logger: Logger) -> EventLoopFuture<Value> {
        guard open.open() else {
            metrics.recordRefusedConnection()
            open.close()
            metrics.recordOpenConnections(open.current)
            return channel.close().map { .refused(channel) }
        }
        countUntilClosed(channel)
        let secure: HTTP2UpgradeChannel
        let timer: ConnectionTimer
        do {
            secure = try tls.current()
            timer = try watchDeadlines(of: channel, logger: logger)
        } catch {
            return Self.failed(channel, error)
        }
        let bound = NIOLoopBound(timer, eventLoop: channel.eventLoop)
        return secure.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let handshake = try channel.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self)
            try channel.pipeline.syncOperations.addHandler(ALPNWatcher(bound.value), position: .after(handshake))
            return .secure(value, secure)
        }.flatMapError { Self.failed(channel, $0) }
    }

    /// Gives back the place `open.open()` took for the connection when it closes.
    private func countUntilClosed(_ channel: any Channel) {
        let open = self.open
        let metrics = self.metrics
        channel.closeFuture.whenComplete { _ in
            open.close()
            metrics.recordOpenConnections(open.current)
        }
        metrics.recordOpenConnections(open.current)
    }

    /// Puts the connection under its deadlines: one timer, fed its raw bytes first.
    private func watchDeadlines(of channel: any Channel, logger: Logger) throws -> ConnectionTimer {
        let metrics = self.metrics
        let timer = ConnectionTimer(channel: channel, limits: limits) { phase in
            metrics.recordConnectionTimeout(phase: phase.rawValue)
            logger.debug("closing a connection that stayed too long", metadata: ["phase": "\(phase.rawValue)"])
        }
        try channel.pipeline.syncOperations.addHandler(RawBytesWatcher(timer), position: .first)
        return timer
    }

    /// A channel whose setup failed is never run: closed here, or its slot is never given back.
    private static func failed(_ channel: any Channel, _ error: any Error) -> EventLoopFuture<Value> {
        channel.close(promise: nil)
        return channel.eventLoop.makeFailedFuture(error)
    }

    func handle(value: Value, logger: Logger) async {
        switch value {
        case .plain(let http, let admitted):
            guard admitted else {
                await refuse(http, logger: logger)
                return
            }
            await HTTP1Channel(responder: responder).handle(value: http, logger: logger)
        case .secure(let value, let channel):
            await channel.handle(value: value, logger: logger)
        case .refused:
            return
        }
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

/// The TLS channel for the certificate in use: built once per reload of
/// ``ServerTLS`` (its SSL context is the costly part), shared by every
/// connection opened until the next.
final class SecureChannels: Sendable {
    let tls: ServerTLS
    let limits: ConnectionLimits
    let responder: HTTPChannelHandler.Responder
    private let built = NIOLockedValueBox<(generation: Int, channel: HTTP2UpgradeChannel)?>(nil)

    init(tls: ServerTLS, limits: ConnectionLimits, responder: @escaping HTTPChannelHandler.Responder) {
        self.tls = tls
        self.limits = limits
        self.responder = responder
    }

    func current() throws -> HTTP2UpgradeChannel {
        let (generation, configuration) = tls.configuration
        let limits = self.limits
        if let built = built.withLockedValue({ $0 }), built.generation == generation { return built.channel }
        let channel = try HTTP2UpgradeChannel(
            tlsConfiguration: configuration,
            configuration: HTTP2ChannelConfiguration(
                idleTimeout: limits.idleTimeout,
                // HTTP/1.1 over TLS: the connection's deadlines, found through its pipeline; an
                // HTTP/2 stream: deadlines of its own, closing the stream.
                streamConfiguration: HTTP1Channel.Configuration(additionalChannelHandlers: [RequestPartsWatcher(streamLimits: limits)])),
            responder: responder)
        self.built.withLockedValue { $0 = (generation, channel) }
        return channel
    }
}
