import FerryProtocol
import Hummingbird

/// The state every API route shares, and the access rule they all apply.
struct SyncAPI: Sendable {
    let store: any SyncStore
    let blobs: any BlobStore
    let configuration: FerryServerConfiguration
    let metrics: ServerMetrics
    let liveStreams: LiveStreamQuota
    let schemas: RequestSchemas
    let readiness: ServerReadiness
    /// Live pages built once per scope change and shared by its streams.
    let livePages = LivePages()

    init(
        store: any SyncStore, blobs: any BlobStore, configuration: FerryServerConfiguration, metrics: ServerMetrics,
        schemas: RequestSchemas, readiness: ServerReadiness = ServerReadiness()
    ) {
        self.store = store
        self.readiness = readiness
        self.blobs = blobs
        self.configuration = configuration
        self.metrics = metrics
        self.schemas = schemas
        self.liveStreams = LiveStreamQuota(perUser: configuration.connections.maxLiveStreamsPerUser)
    }

    var limits: ServerLimits { configuration.limits }

    /// Throws the same 403 whether the scope is missing, empty or someone
    /// else's, so a refusal tells nothing about it.
    /// - Returns: the role the user holds, at least `role`.
    @discardableResult
    func require(_ role: ScopeRole, in scope: String, for userID: String, grants: [String: ScopeRole]) async throws -> ScopeRole {
        let membership = ScopeName.owner(of: scope) == nil ? try await store.membership(of: userID, in: scope) : nil
        guard let actual = ScopeAccess.role(of: userID, in: scope, membership: membership, granted: grants[scope]), actual >= role else {
            throw FerryServerError.noAccess(to: scope, needs: role)
        }
        return actual
    }

    /// Checks a list of followed scopes: count, names, no repeats.
    func checkFollowed(_ scopes: [String]) throws(FerryServerError) {
        guard !scopes.isEmpty else { throw .badRequest("name at least one scope") }
        guard scopes.count <= limits.maxScopesPerRequest else {
            throw .badRequest("at most \(limits.maxScopesPerRequest) scopes per request; this one names \(scopes.count)")
        }
        for scope in scopes where !ScopeName.isValid(scope) {
            throw .badRequest("scope \(MutationCheck.quoted(scope)) is not a valid scope name")
        }
        guard Set(scopes).count == scopes.count else { throw .badRequest("a scope is named twice") }
    }

    /// A path parameter, percent-decoded.
    static func pathParameter(_ name: String, _ context: FerryRequestContext) throws -> String {
        let raw = try context.parameters.require(name)
        guard let decoded = raw.removingPercentEncoding, !decoded.isEmpty else {
            throw FerryServerError.badRequest("the path's \(name) \(MutationCheck.quoted(raw)) is not valid percent-encoding")
        }
        return decoded
    }
}
