import Foundation

/// Who is signed in, to which server.
public struct Session: Sendable, Hashable {
    public var server: URL
    public var token: String
    public var user: String

    /// The `sub` of a JWT, read without checking its signature (the server
    /// checks it; the app only needs to know whose notes these are).
    static func user(fromToken token: String) -> String? {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var payload = String(parts[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while payload.count % 4 != 0 { payload += "=" }
        guard let data = Data(base64Encoded: payload),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let subject = object["sub"] as? String, !subject.isEmpty
        else { return nil }
        return subject
    }
}
