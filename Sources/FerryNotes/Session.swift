import Foundation

/// Who is signed in, to which server.
public struct Session: Sendable, Hashable {
    public var server: URL
    public var token: String
    public var user: String

    /// The `sub` of a JWT, read without checking its signature (the server
    /// checks it; the app only needs to know whose notes these are).
    static func user(fromToken token: String) -> String? {
        guard let subject = claims(token)?["sub"] as? String, !subject.isEmpty else { return nil }
        return subject
    }

    /// When the token stops being valid (its `exp`, in milliseconds since
    /// 1970), or `nil` for a token without one.
    static func expiry(ofToken token: String) -> Int64? {
        guard let seconds = (claims(token)?["exp"] as? NSNumber)?.doubleValue, seconds.isFinite else { return nil }
        return Int64(seconds * 1000)
    }

    private static func claims(_ token: String) -> [String: Any]? {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var payload = String(parts[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while payload.count % 4 != 0 { payload += "=" }
        guard let data = Data(base64Encoded: payload) else { return nil }
        return try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    }
}
