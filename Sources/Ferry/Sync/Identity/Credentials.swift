/// The bearer token the engine sends, and the app's way to get a new one.
actor Credentials {
    private(set) var token: String?
    private let refresher: (@Sendable () async throws -> String)?

    init(token: String?, refresher: (@Sendable () async throws -> String)?) {
        self.token = token
        self.refresher = refresher
    }

    func update(_ token: String?) {
        self.token = token
    }

    /// Asks the app for a new token; `false` when it has none to give.
    func refresh() async -> Bool {
        guard let refresher else { return false }
        do {
            token = try await refresher()
            return true
        } catch {
            return false
        }
    }
}
