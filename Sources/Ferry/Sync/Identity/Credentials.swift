/// The bearer token the engine sends, and the app's way to get a new one.
actor Credentials {
    private(set) var token: String?
    private let refresher: (@Sendable () async throws -> String)?

    /// The server refused the token and no new one could be had: the
    /// background loop asks the server nothing more until the app gives a
    /// token (``update(_:)``) or syncs explicitly, so a signed-out device
    /// is never a retry loop.
    private(set) var signedOut = false

    init(token: String?, refresher: (@Sendable () async throws -> String)?) {
        self.token = token
        self.refresher = refresher
    }

    func update(_ token: String?) {
        self.token = token
        signedOut = false
    }

    /// Asks the app for a new token; `false` when it has none to give,
    /// which signs the engine out.
    func refresh() async -> Bool {
        guard let refresher else {
            signedOut = true
            return false
        }
        do {
            token = try await refresher()
            signedOut = false
            return true
        } catch {
            signedOut = true
            return false
        }
    }
}
