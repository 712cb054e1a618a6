import FerryProtocol
import Foundation

/// A push readied to go out later (``SyncTransport/preparePush(_:)``): the
/// request, and its body when the transport that prepared it encoded it.
/// In a long drain the engine prepares batch N+1 while batch N is on the
/// wire, so encoding it no longer stands between N's reply and N+1's
/// request.
///
/// ```swift
/// let prepared = transport.preparePush(PushRequest(clientID: id, mutations: batch))
/// // … later, once the batch before it is answered:
/// let reply = try await transport.push(prepared, token: token)
/// ```
public struct PreparedPush: Sendable {
    public let request: PushRequest
    /// The request as its JSON body, when it was encoded ahead.
    public let json: Data?
    /// The same body gzipped, when the transport would send it compressed.
    public let gzipped: Data?

    public init(_ request: PushRequest, json: Data? = nil, gzipped: Data? = nil) {
        self.request = request
        self.json = json
        self.gzipped = gzipped
    }
}
