import AsyncHTTPClient
import Ferry
import FerryProtocol
import Foundation
import NIOCore
import NIOFoundationCompat

/// The server's scope endpoints, for notebooks: create a shared scope, add
/// or remove a member, list the caller's scopes.
///
/// ```swift
/// let client = ScopeClient(session: session)
/// try await client.create("nb-3fa1@alice")
/// try await client.share("nb-3fa1@alice", with: "bob", role: .write)
/// ```
struct ScopeClient: Sendable {
    let session: Session
    var client: HTTPClient = .shared

    /// Creates a shared scope in the caller's namespace; one that exists already is fine.
    func create(_ scope: String) async throws {
        _ = try await send(.createScope, body: CreateScopeRequest(scope: scope), accepting: [200, 201, 409])
    }

    func share(_ scope: String, with user: String, role: ScopeRole) async throws {
        _ = try await send(.member(scope: scope, user: user), body: MemberRequest(role: role), accepting: [200, 201, 204])
    }

    /// Takes `user` out of a scope the caller owns. A user who is no member
    /// (a typo, or taken out already) is refused with 404 and said as such.
    func unshare(_ scope: String, from user: String) async throws {
        _ = try await send(.removeMember(scope: scope, user: user), body: nil as MemberRequest?, accepting: [204])
    }

    /// The scopes the user owns or belongs to.
    func list() async throws -> [ScopeMembership] {
        let body = try await send(.scopes, body: nil as CreateScopeRequest?, accepting: [200])
        return try JSONDecoder().decode(ScopeList.self, from: body).scopes
    }

    /// This client's refusals as the app reports them.
    static func explain(_ error: any Error) -> any Error {
        guard let refusal = error as? Refusal else { return error }
        return NotesError(
            refusal.status == 401 ? .refused : .failure,
            refusal.status == 401 ? "the server refused the token; `ferry-notes login` with a fresh one" : refusal.message)
    }

    private func send(_ endpoint: SyncEndpoint, body: (some Encodable)?, accepting: Set<Int>) async throws -> Data {
        var request = HTTPClientRequest(endpoint, base: session.server, token: session.token)
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: try JSONEncoder().encode(body)))
        }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: .seconds(5))
        } catch {
            throw NotesError(.unreachable, "the server at \(session.server.absoluteString) is unreachable (\(error))")
        }
        let data = Data(buffer: try await response.body.collect(upTo: 1 << 20))
        guard accepting.contains(Int(response.status.code)) else {
            let message = (try? JSONDecoder().decode(ErrorResponse.self, from: data))?.message ?? response.status.description
            throw Refusal(status: Int(response.status.code), message: "\(endpoint.method.rawValue) \(endpoint.path): \(response.status.code) \(message)")
        }
        return data
    }

    /// The server answered with an error status.
    struct Refusal: Error, CustomStringConvertible {
        var status: Int
        var message: String
        var description: String { message }
    }
}
