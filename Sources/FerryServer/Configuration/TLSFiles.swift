/// Where the server's certificate chain and private key are, as PEM files.
/// The server reads them at start and again on ``ServerTLS/reload()``
/// (`ferry-server` calls it on `SIGHUP`), so a renewed certificate is
/// served to new connections without a restart.
///
/// ```swift
/// var configuration = FerryServerConfiguration(jwtSecret: secret)
/// configuration.tls = TLSFiles(certificateChain: "/etc/ferry/fullchain.pem", privateKey: "/etc/ferry/privkey.pem")
/// ```
public struct TLSFiles: Sendable, Hashable {
    /// The certificate, then any intermediates, in PEM.
    public var certificateChain: String
    /// The certificate's private key, in PEM.
    public var privateKey: String

    public init(certificateChain: String, privateKey: String) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
    }
}
