import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import NIOTLS

/// The server's certificate and key, read from ``TLSFiles``, and read again
/// on ``reload()``: connections opened after a reload get the new
/// certificate, and those already open (live streams among them) keep theirs.
///
/// ```swift
/// let tls = try ServerTLS(files: TLSFiles(certificateChain: "cert.pem", privateKey: "key.pem"))
/// let app = try await FerryApplication.build(configuration: configuration, store: store, tls: tls)
/// // later, after the files were renewed (ferry-server does this on SIGHUP):
/// try tls.reload()
/// ```
public final class ServerTLS: Sendable {
    public let files: TLSFiles
    private let current: NIOLockedValueBox<(generation: Int, configuration: TLSConfiguration)>

    /// Reads the files.
    ///
    /// - Throws: ``FerryServerError`` `badRequest` naming the file that
    ///   cannot be read or holds no certificate or key.
    public init(files: TLSFiles) throws(FerryServerError) {
        self.files = files
        current = NIOLockedValueBox((0, try Self.load(files)))
    }

    /// Reads the files again. On an error the certificate in use stays.
    ///
    /// - Throws: ``FerryServerError`` `badRequest`, as ``init(files:)``.
    public func reload() throws(FerryServerError) {
        let configuration = try Self.load(files)
        current.withLockedValue { $0 = ($0.generation + 1, configuration) }
    }

    /// How many reloads have taken effect.
    public var generation: Int { current.withLockedValue { $0.generation } }

    var configuration: (generation: Int, configuration: TLSConfiguration) { current.withLockedValue { $0 } }

    private static func load(_ files: TLSFiles) throws(FerryServerError) -> TLSConfiguration {
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey
        do {
            chain = try NIOSSLCertificate.fromPEMFile(files.certificateChain)
        } catch {
            throw .badRequest("cannot read a PEM certificate from \(files.certificateChain): \(error)")
        }
        guard !chain.isEmpty else { throw .badRequest("\(files.certificateChain) holds no certificate") }
        do {
            key = try NIOSSLPrivateKey(file: files.privateKey, format: .pem)
        } catch {
            throw .badRequest("cannot read a PEM private key from \(files.privateKey): \(error)")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        // A key that does not belong to the certificate fails here, not at the first handshake.
        do {
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw .badRequest("\(files.privateKey) is not the key of \(files.certificateChain): \(error)")
        }
        return configuration
    }
}

/// Sees the end of a connection's TLS handshake: a connection that chose
/// HTTP/2 by ALPN leaves the HTTP/1.1 deadlines (its streams are many and
/// long-lived; HTTP/2 keeps its own idle timeout).
final class ALPNWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias InboundOut = NIOAny

    private let timer: ConnectionTimer

    init(_ timer: ConnectionTimer) {
        self.timer = timer
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let negotiated)? = event as? TLSUserEvent, negotiated == "h2" {
            timer.stop()
        }
        context.fireUserInboundEventTriggered(event)
    }
}
