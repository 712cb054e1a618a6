@testable import FerryServer
import Testing

/// The token bucket and the rate syntax, decided without a server or a clock.
@Suite struct RateLimitRulesTests {
    @Test func aBucketAdmitsItsBurstThenRefusesWithWholeSecondsToWait() {
        var bucket = TokenBucket(RateLimit(perSecond: 4, burst: 8), at: .zero)
        for _ in 0..<8 { #expect(bucket.take(1, at: .zero) == .admitted) }
        #expect(bucket.take(1, at: .zero) == .refused(retryAfter: .seconds(1)))
        #expect(bucket.toldToWaitUntil == .seconds(1))
        // Refills to its burst, never beyond.
        #expect(bucket.take(1, at: .seconds(1)) == .admitted)
        #expect(bucket.isFull(at: .seconds(3)))
        for _ in 0..<8 { #expect(bucket.take(1, at: .seconds(100)) == .admitted) }
        #expect(bucket.take(1, at: .seconds(100)) == .refused(retryAfter: .seconds(1)))
    }

    /// A client that comes back before the time it was told is held until
    /// then; asked again after the hold, the bucket answers for itself.
    @Test func aRequestThatIgnoredRetryAfterIsHeldUntilTheTimeItWasTold() {
        var bucket = TokenBucket(RateLimit(perSecond: 1, burst: 1), at: .zero)
        #expect(bucket.take(1, at: .zero) == .admitted)
        #expect(bucket.take(1, at: .milliseconds(100)) == .refused(retryAfter: .seconds(1)))
        #expect(bucket.take(1, at: .milliseconds(300)) == .hold(.milliseconds(800)))
        #expect(bucket.take(1, at: .milliseconds(600)) == .hold(.milliseconds(500)))
        #expect(bucket.take(1, at: .milliseconds(1100), mayHold: false) == .admitted)
        // Two held at once: one gets the token, the other is refused, not held again.
        #expect(bucket.take(1, at: .milliseconds(1100), mayHold: false) == .refused(retryAfter: .seconds(1)))
        #expect(!bucket.isFull(at: .milliseconds(2099)))
        #expect(bucket.isFull(at: .milliseconds(2100)))
    }

    @Test func aCostLargerThanTheBurstWaitsForAFullBucketThenLeavesItInDebt() {
        var bucket = TokenBucket(RateLimit(perSecond: 10, burst: 100), at: .zero)
        #expect(bucket.take(50, at: .zero) == .admitted)
        // 1,000 needs a full bucket (100): 50 more tokens, 5 s.
        #expect(bucket.take(1000, at: .zero) == .refused(retryAfter: .seconds(5)))
        #expect(bucket.take(1000, at: .seconds(5)) == .admitted)
        #expect(bucket.tokens == -900)
        // The debt is waited out: 90.1 s to hold one token again.
        #expect(bucket.take(1, at: .seconds(5), mayHold: false) == .refused(retryAfter: .seconds(91)))
        #expect(bucket.take(1, at: .seconds(95.2)) == .admitted)
    }

    @Test func aCostLearntAfterTheFactIsCharged() {
        var bucket = TokenBucket(RateLimit(perSecond: 1, burst: 10), at: .zero)
        #expect(bucket.take(1, at: .zero) == .admitted)
        bucket.charge(20, at: .zero)
        #expect(bucket.tokens == -11)
        #expect(bucket.take(1, at: .seconds(1)) == .refused(retryAfter: .seconds(11)))
        #expect(!bucket.isFull(at: .seconds(20)))
        #expect(bucket.isFull(at: .seconds(21)))
    }

    @Test func ratesParseWithADefaultBurstOfTenSecondsOrSayWhatToWrite() throws {
        #expect(try RateLimit.parse("30") == RateLimit(perSecond: 30, burst: 300))
        #expect(try RateLimit.parse("0.5/2") == RateLimit(perSecond: 0.5, burst: 2))
        #expect(try RateLimit.parse("off") == nil)
        #expect(RateLimit(perSecond: 30, burst: 300).description == "30/300")
        #expect(RateLimit(perSecond: 0.5, burst: 2).description == "0.5/2")
        for bad in ["", "0", "-1", "x", "1/", "1/0", "1/2/3", "nan", "inf", "1/0.5"] {
            #expect(throws: FerryServerError.self, "\(bad)") { try RateLimit.parse(bad) }
        }
    }

    @Test func retryAfterIsWholeSecondsAndAtLeastOne() {
        #expect(RateLimitMiddleware.retryAfterSeconds(.milliseconds(1)) == 1)
        #expect(RateLimitMiddleware.retryAfterSeconds(.seconds(1)) == 1)
        #expect(RateLimitMiddleware.retryAfterSeconds(.milliseconds(1001)) == 2)
    }
}
