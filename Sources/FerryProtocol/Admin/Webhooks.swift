/// A configured webhook and where its deliveries stand
/// (`GET /admin/v1/webhooks`).
public struct WebhookStatus: Sendable, Hashable, Codable {
    public var name: String
    public var url: String
    /// The change feed cursor after the last delivered batch; `nil` before the first.
    public var cursor: String?
    /// Failed attempts in a row.
    public var failures: Int
    /// Parked after too many failures: nothing is sent until a replay.
    public var parked: Bool
    public var lastError: String?
    /// When the last batch was delivered, in milliseconds since 1970.
    public var deliveredAt: Int64?

    public init(
        name: String, url: String, cursor: String? = nil, failures: Int = 0, parked: Bool = false, lastError: String? = nil,
        deliveredAt: Int64? = nil
    ) {
        self.name = name
        self.url = url
        self.cursor = cursor
        self.failures = failures
        self.parked = parked
        self.lastError = lastError
        self.deliveredAt = deliveredAt
    }
}

/// Every configured webhook.
public struct WebhookList: Sendable, Hashable, Codable {
    public var webhooks: [WebhookStatus]

    public init(webhooks: [WebhookStatus]) {
        self.webhooks = webhooks
    }
}

/// The body of `POST /admin/v1/webhooks/{name}/replay`.
///
/// ```swift
/// WebhookReplayRequest()                                  // unpark, resume where it stopped
/// WebhookReplayRequest(from: .cursor, cursor: saved)     // deliver again after `saved`
/// ```
public struct WebhookReplayRequest: Sendable, Hashable, Codable {
    public enum Start: String, Sendable, Hashable, Codable, CaseIterable {
        /// After the last delivered batch.
        case stopped
        /// From the first change the store holds.
        case beginning
        /// After ``WebhookReplayRequest/cursor``.
        case cursor
    }

    public var from: Start?
    public var cursor: String?

    public init(from: Start? = nil, cursor: String? = nil) {
        self.from = from
        self.cursor = cursor
    }
}

/// The body a webhook receives: a batch of changes from the change feed.
///
/// Signed: the `Ferry-Signature` header is `t=<unix seconds>,v1=<hex>`,
/// where `<hex>` is HMAC-SHA256 with the webhook's secret over
/// `"<t>.<body>"`. A receiver checks it and that `t` is recent.
public struct WebhookDelivery: Sendable, Hashable, Codable {
    /// The webhook's name.
    public var webhook: String
    public var changes: [ChangeFeedEntry]
    /// The feed cursor after these changes.
    public var cursor: String

    public init(webhook: String, changes: [ChangeFeedEntry], cursor: String) {
        self.webhook = webhook
        self.changes = changes
        self.cursor = cursor
    }
}
