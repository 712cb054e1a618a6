@testable import FerryServer
import HTTPTypes
import Testing

/// The decisions behind connection handling, without a socket.
@Suite struct ConnectionDeadlineTests {
    @Test func eachPhaseHasItsDeadline() {
        var limits = ConnectionLimits()
        limits.idleTimeout = .seconds(60)
        limits.headerReadTimeout = .seconds(10)
        limits.bodyReadTimeout = .seconds(30)
        var deadline = ConnectionDeadline(limits: limits)
        #expect(deadline.connected() == .arm(.seconds(60), .idle))
        #expect(deadline.bytesArrived() == .arm(.seconds(10), .readingHead))
        // More bytes of the same head do not renew the deadline.
        #expect(deadline.bytesArrived() == .none)
        #expect(deadline.headReceived() == .arm(.seconds(30), .readingBody))
        #expect(deadline.bytesArrived() == .none)
        #expect(deadline.requestEnded() == .disarm)
        // A live stream's response runs as long as it runs.
        #expect(deadline.bytesArrived() == .none)
        #expect(deadline.responseEnded() == .arm(.seconds(60), .idle))
        #expect(deadline.bytesArrived() == .arm(.seconds(10), .readingHead))
    }

    /// A request answered before its body ended (a 401 read from the
    /// head) leaves the connection idle, under the idle deadline, once the
    /// body ends: it never escapes every deadline.
    @Test func aRequestAnsweredBeforeItsBodyEndedLeavesTheConnectionIdle() {
        var deadline = ConnectionDeadline(limits: ConnectionLimits())
        _ = deadline.connected()
        _ = deadline.bytesArrived()
        #expect(deadline.headReceived() == .arm(.seconds(30), .readingBody))
        #expect(deadline.responseEnded() == .none)  // the body still has its deadline
        #expect(deadline.requestEnded() == .arm(.seconds(60), .idle))
        #expect(deadline.phase == .idle)
    }

    /// Pipelined requests: the first response ending does not put a
    /// connection whose second request is being handled under the idle deadline.
    @Test func pipelinedRequestsKeepTheConnectionBusy() {
        var deadline = ConnectionDeadline(limits: ConnectionLimits())
        _ = deadline.connected()
        _ = deadline.bytesArrived()
        _ = deadline.headReceived()
        _ = deadline.requestEnded()
        _ = deadline.headReceived()
        #expect(deadline.requestEnded() == .disarm)
        #expect(deadline.responseEnded() == .none)
        #expect(deadline.phase == .handling)
        #expect(deadline.responseEnded() == .arm(.seconds(60), .idle))
    }

    @Test func theConnectionCapFitsTheDescriptorLimit() {
        var limits = ConnectionLimits()
        #expect(limits.effectiveMaxConnections(descriptorLimit: 1_048_576) == 4096)
        #expect(limits.effectiveMaxConnections(descriptorLimit: 1024) == 768)
        #expect(limits.effectiveMaxConnections(descriptorLimit: 256) == 192)
        #expect(limits.effectiveMaxConnections(descriptorLimit: 40) == 8)
        limits.maxConnections = 100
        #expect(limits.effectiveMaxConnections(descriptorLimit: 1024) == 100)
    }

    @Test func aWrongMethodIsToldFromAWrongPath() {
        let table = RouteTable([(.get, "/healthz"), (.put, "/v1/scopes/:scope/members/:user"), (.get, "/v1/scopes"), (.post, "/v1/scopes")])
        #expect(table.methods(allowedFor: "/healthz") == ["GET"])
        #expect(table.methods(allowedFor: "/v1/scopes") == ["GET", "POST"])
        #expect(table.methods(allowedFor: "/v1/scopes/team%3Ax/members/bob") == ["PUT"])
        #expect(table.methods(allowedFor: "/v1/scopes/x/members").isEmpty)
        #expect(table.methods(allowedFor: "/nope").isEmpty)
    }

    @Test func liveStreamPlacesComeBackWhenReleased() {
        let quota = LiveStreamQuota(perUser: 2)
        var tickets = [quota.take(for: "alice"), quota.take(for: "alice")]
        #expect(tickets.allSatisfy { $0 != nil })
        #expect(quota.take(for: "alice") == nil)
        #expect(quota.take(for: "bob") != nil)
        tickets.removeFirst()
        #expect(quota.count(for: "alice") == 1)
        #expect(quota.take(for: "alice") != nil)
        tickets.removeAll()
    }
}
