@testable import FerryServer
import FerryProtocol
import Foundation
import Testing

/// The Swift wire types and the document describe one wire: an instance of
/// each component schema, generated from the document, decodes into its
/// `FerryProtocol` type and encodes back to the same JSON. A property the
/// document adds and the type lacks is dropped on the way, and fails here;
/// one the type adds is refused by the server's schema check, which the
/// agreement and API tests drive.
@Suite struct WireTypeAgreementTests {
    static let types: [(String, any Codable.Type)] = [
        ("PushRequest", PushRequest.self), ("Mutation", Mutation.self), ("PushResponse", PushResponse.self), ("CoveredScope", PushResponse.CoveredScope.self),
        ("MutationResult", MutationResult.self), ("Conflict", Conflict.self), ("ServerRow", ServerRow.self),
        ("ConflictNotice", ConflictNotice.self), ("PullRequest", PullRequest.self), ("ScopeCursor", PullRequest.ScopeCursor.self),
        ("PullResponse", PullResponse.self), ("PullPage", PullPage.self), ("RowChange", RowChange.self),
        ("LiveEvent", LiveEvent.self), ("ScopeMembership", ScopeMembership.self), ("ScopeList", ScopeList.self),
        ("CreateScopeRequest", CreateScopeRequest.self), ("MemberRequest", MemberRequest.self),
        ("ErrorResponse", ErrorResponse.self), ("SeenCursor", PushRequest.Seen.self), ("SettledNotice", PushRequest.SettledNotice.self),
        // The admin API.
        ("BackendWriteRequest", BackendWriteRequest.self), ("BackendWrite", BackendWrite.self),
        ("BackendWriteResponse", BackendWriteResponse.self), ("ChangeFeedEntry", ChangeFeedEntry.self),
        ("ChangeFeedPage", ChangeFeedPage.self), ("ScopeMember", ScopeMember.self), ("ScopeSummary", ScopeSummary.self),
        ("ScopeSummaryPage", ScopeSummaryPage.self), ("AdminCreateScopeRequest", AdminCreateScopeRequest.self),
        ("ListedRow", ListedRow.self), ("RowPage", RowPage.self), ("UserPage", UserPage.self), ("DeviceSummary", DeviceSummary.self),
        ("DeviceList", DeviceList.self), ("WebhookStatus", WebhookStatus.self), ("WebhookList", WebhookList.self),
        ("WebhookReplayRequest", WebhookReplayRequest.self),
    ]

    @Test func everyComponentHasItsType() throws {
        let root = try #require(try JSONSerialization.jsonObject(with: OpenAPIDocument.bundled().data) as? [String: Any])
        let components = try #require((root["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let named = Set(Self.types.map(\.0)).union(["ColumnValue", "Columns"])
        #expect(Set(components.keys) == named, "components without a Swift type, or types without a component")
    }

    @Test(arguments: Self.types.map(\.0))
    func aDocumentedInstanceSurvivesItsType(_ name: String) throws {
        let root = try #require(try JSONSerialization.jsonObject(with: OpenAPIDocument.bundled().data) as? [String: Any])
        let components = try #require((root["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let type = try #require(Self.types.first { $0.0 == name }?.1)
        var generator = SchemaGenerator(schemas: components, seed: 20261125)
        for _ in 0..<60 {
            let instance = generator.valid(schemaNamed: name)
            let text = try OpenAPIAgreementTests.text(instance)
            let decoded = try JSONDecoder().decode(type, from: Data(text.utf8))
            let again = try JSONSerialization.jsonObject(with: JSONEncoder().encode(decoded), options: .fragmentsAllowed)
            #expect(Self.normalized(again) == Self.normalized(instance), "\(name): \(text) came back as \(Self.normalized(again))")
        }
    }

    /// JSON as text with sorted keys, members holding null, `false` or `[]`
    /// dropped: the wire reads an absent member as that (a page with no
    /// notices, not lost history).
    static func normalized(_ value: Any) -> String {
        func isDefault(_ value: Any) -> Bool {
            value is NSNull || (value as? [Any])?.isEmpty == true || (value as? Bool) == false
        }
        func strip(_ value: Any) -> Any {
            if let object = value as? [String: Any] {
                return object.filter { !isDefault($0.value) }.mapValues(strip)
            }
            if let array = value as? [Any] { return array.map(strip) }
            return value
        }
        return (try? OpenAPIAgreementTests.text(strip(value))) ?? "?"
    }
}
