/// How a configuration that holds a secret prints: every stored property
/// as Swift would print it, but the named ones as `<redacted>`. Logs that
/// describe a configuration (Swift Service Lifecycle describes every
/// service at debug) never carry a secret.
///
/// ```swift
/// extension AdminConfiguration: CustomStringConvertible {
///     public var description: String { redactedDescription(of: self, hiding: ["token"]) }
/// }
/// ```
package func redactedDescription(of value: Any, hiding secrets: Set<String>) -> String {
    let mirror = Mirror(reflecting: value)
    let fields = mirror.children.map { child in
        let label = child.label ?? "_"
        return secrets.contains(label) ? "\(label): <redacted>" : "\(label): \(String(reflecting: child.value))"
    }
    return "\(mirror.subjectType)(\(fields.joined(separator: ", ")))"
}

extension FerryServerConfiguration: CustomStringConvertible, CustomDebugStringConvertible {
    /// Every setting but the JWT secret.
    public var description: String { redactedDescription(of: self, hiding: ["jwtSecret"]) }
    public var debugDescription: String { description }
}

extension AdminConfiguration: CustomStringConvertible, CustomDebugStringConvertible {
    /// Every setting but the token.
    public var description: String { redactedDescription(of: self, hiding: ["token"]) }
    public var debugDescription: String { description }
}

extension WebhookConfiguration: CustomStringConvertible, CustomDebugStringConvertible {
    /// Every setting but the signing secret and the URL (which may carry a
    /// token of the receiver's); its name says which webhook it is.
    public var description: String { redactedDescription(of: self, hiding: ["secret", "url"]) }
    public var debugDescription: String { description }
}

extension JWTSecret: CustomStringConvertible, CustomDebugStringConvertible {
    /// Where the secret came from, not the secret.
    public var description: String { redactedDescription(of: self, hiding: ["value"]) }
    public var debugDescription: String { description }
}
