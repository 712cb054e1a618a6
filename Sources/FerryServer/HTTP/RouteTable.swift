import HTTPTypes

/// The server's routes as method and path pattern (`:name` matches one
/// segment), to answer a known path with a wrong method 405 and an `Allow`
/// header instead of 404.
///
/// ```swift
/// let table = RouteTable([(.get, "/healthz"), (.put, "/v1/scopes/:scope/members/:user")])
/// table.methods(allowedFor: "/healthz")   // ["GET"]
/// table.methods(allowedFor: "/nope")      // []
/// ```
struct RouteTable: Sendable {
    private let routes: [(method: String, segments: [Substring])]

    init(_ routes: [(HTTPRequest.Method, String)]) {
        self.routes = routes.map { ($0.0.rawValue, $0.1.split(separator: "/")) }
    }

    func methods(allowedFor path: String) -> [String] {
        let segments = path.split(separator: "/")
        var methods: [String] = []
        for route in routes where route.segments.count == segments.count && !methods.contains(route.method) {
            let matches = zip(route.segments, segments).allSatisfy { pattern, segment in pattern.hasPrefix(":") || pattern == segment }
            if matches { methods.append(route.method) }
        }
        return methods
    }
}
