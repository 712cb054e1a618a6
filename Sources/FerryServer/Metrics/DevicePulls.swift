/// The last pull this instance served to each device: when, and for each
/// scope how many rows it carried and whether more were waiting (the
/// device was behind). Kept in memory, for the console; the store keeps no
/// record of pulls, so the read path writes nothing.
///
/// ```swift
/// var pulls = DevicePulls()
/// pulls.record(userID: "alice", clientID: "phone", pages: [.init(scope: "user:alice", rows: 500, hasMore: true)], at: now)
/// pulls.pulls(of: "alice")["phone"]?.pages.first?.hasMore   // true: the phone was behind
/// ```
struct DevicePulls: Sendable {
    struct Page: Sendable, Hashable {
        var scope: String
        var rows: Int
        var hasMore: Bool
    }

    struct Pull: Sendable, Hashable {
        var at: Int64
        var pages: [Page]
    }

    /// The most devices remembered; the one that pulled least recently goes first.
    var capacity = 10_000
    private var byDevice: [DeviceKey: Pull] = [:]

    private struct DeviceKey: Hashable {
        var userID: String
        var clientID: String
    }

    mutating func record(userID: String, clientID: String, pages: [Page], at now: Int64) {
        let key = DeviceKey(userID: userID, clientID: clientID)
        if byDevice[key] == nil, byDevice.count >= capacity, let oldest = byDevice.min(by: { $0.value.at < $1.value.at })?.key {
            byDevice[oldest] = nil
        }
        byDevice[key] = Pull(at: now, pages: pages)
    }

    func pulls(of userID: String) -> [String: Pull] {
        var found: [String: Pull] = [:]
        for (key, pull) in byDevice where key.userID == userID { found[key.clientID] = pull }
        return found
    }
}
