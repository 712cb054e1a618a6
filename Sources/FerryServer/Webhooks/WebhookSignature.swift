import Crypto
import Foundation

/// The signature on a webhook delivery: `Ferry-Signature: t=<unix
/// seconds>,v1=<hex>`, HMAC-SHA256 with the webhook's secret over
/// `"<t>.<body>"` — the timestamp is signed with the body, so a receiver
/// that checks it is recent refuses a replayed delivery.
///
/// ```swift
/// let header = WebhookSignature.header(body: body, secret: secret, time: 1_764_000_000)
/// WebhookSignature.verify(header: header, body: body, secret: secret, now: 1_764_000_010, tolerance: 300)   // true
/// ```
public enum WebhookSignature {
    /// The header's name.
    public static let headerName = "Ferry-Signature"

    public static func header(body: some DataProtocol, secret: String, time: Int64) -> String {
        "t=\(time),v1=\(hex(body: body, secret: secret, time: time))"
    }

    /// Whether `header` signs `body` with `secret`, no more than `tolerance`
    /// seconds from `now`.
    public static func verify(header: String, body: some DataProtocol, secret: String, now: Int64, tolerance: Int64) -> Bool {
        var time: Int64?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { time = Int64(pair[1]) }
            if pair[0] == "v1" { signatures.append(String(pair[1])) }
        }
        guard let time, abs(now - time) <= tolerance else { return false }
        let expected = hex(body: body, secret: secret, time: time)
        return signatures.contains { AdminAuthMiddleware.same($0, expected) }
    }

    private static func hex(body: some DataProtocol, secret: String, time: Int64) -> String {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: Data(secret.utf8)))
        hmac.update(data: Data("\(time).".utf8))
        hmac.update(data: Data(body))
        return Data(hmac.finalize()).map { String(format: "%02x", $0) }.joined()
    }
}
