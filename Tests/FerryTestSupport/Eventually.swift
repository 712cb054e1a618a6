/// Polls `condition` until it holds or `timeout` passes, and says whether
/// it held: how every test waits for something another task or process
/// does. (Timing itself is never asserted this way; decisions take an
/// injected clock.)
///
/// ```swift
/// #expect(try await eventually(within: .seconds(1)) { feed.subscriberCount == 0 })
/// ```
public func eventually(
    within timeout: Duration, every interval: Duration = .milliseconds(10),
    _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: interval)
    }
    return try await condition()
}
