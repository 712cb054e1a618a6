import Foundation

/// The OpenAPI 3.1 description of every endpoint, committed as
/// `Sources/FerryServer/OpenAPI/openapi.json` and served at `/openapi.json`.
public struct OpenAPIDocument: Sendable {
    /// The document's bytes, as committed.
    public let data: Data

    /// Loads the committed document from the module's resources.
    public static func bundled() throws -> OpenAPIDocument {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "json") else {
            throw FerryServerError(.internalError, "openapi.json is missing from the FerryServer resources")
        }
        return OpenAPIDocument(data: try Data(contentsOf: url))
    }
}
