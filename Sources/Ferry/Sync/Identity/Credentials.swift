/// The bearer token the engine sends, and the app's way to get a new one.
///
/// A token the server refused and no refresher could replace signs the
/// engine out: the background loop asks the server nothing more until the
/// app gives a token (``update(_:)``), a request is accepted again, or the
/// refresher (tried again every ``signedOutRefreshInterval``) has one — so
/// a signed-out device is never a retry loop.
actor Credentials {
    private var current: String?
    private let refresher: (@Sendable () async throws -> String)?
    /// The token the last request carried: a refusal that follows is about it.
    private var lastSent: String?
    /// The token refused with no replacement; signed out while it is the current one.
    private var refused: String??
    private var lastRefreshAttempt: ContinuousClock.Instant?

    /// How often a signed-out engine asks its refresher again.
    static let signedOutRefreshInterval: Duration = .seconds(30)

    init(token: String?, refresher: (@Sendable () async throws -> String)?) {
        self.current = token
        self.refresher = refresher
    }

    /// The token to send with a request.
    var token: String? {
        lastSent = current
        return current
    }

    var signedOut: Bool {
        refused.map { $0 == current } ?? false
    }

    func update(_ token: String?) {
        current = token
        refused = nil
    }

    /// A request was accepted: whatever was refused before is not now.
    func accepted() {
        refused = nil
    }

    /// Asks the app for a new token after a refusal; `false` when it has
    /// none to give, which signs the engine out. A token the app gave since
    /// the refused request was sent counts as new.
    func refresh() async -> Bool {
        let refusedToken = lastSent
        if refusedToken != current {
            return true
        }
        lastRefreshAttempt = .now
        guard let refresher else {
            refused = .some(refusedToken)
            return false
        }
        do {
            current = try await refresher()
            refused = nil
            return true
        } catch {
            refused = .some(refusedToken)
            return false
        }
    }

    /// Signed out with a refresher: asks it again when the interval has
    /// passed since the last attempt (a provider that was down may be back).
    /// - Returns: whether the engine is signed in now.
    func refreshIfDue() async -> Bool {
        guard signedOut else { return true }
        guard refresher != nil, lastRefreshAttempt.map({ .now - $0 >= Self.signedOutRefreshInterval }) ?? true else { return false }
        lastSent = current
        return await refresh()
    }
}
