/// One server-sent event on `GET /v1/live`.
///
/// The stream opens with a `ready` event once the subscription is in place,
/// then sends a `change` event whenever a followed scope has news. The event
/// name is the SSE `event:` field; this value is the JSON in its `data:` field.
///
/// ```
/// event: ready
/// data: {"scopes":["user:alice"]}
///
/// event: change
/// data: {"scopes":["user:alice"]}
/// ```
public struct LiveEvent: Sendable, Hashable, Codable {
    /// The SSE event names.
    public enum Name: String, Sendable, Hashable, Codable {
        case ready
        case change
    }

    /// The followed scopes this event is about.
    public var scopes: [String]

    public init(scopes: [String]) {
        self.scopes = scopes
    }
}
