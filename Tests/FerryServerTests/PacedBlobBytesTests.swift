import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import FerryServer

/// A download's reader waits for the event loop that writes its chunks: while
/// the loop is held up, the reader takes no more than one chunk ahead.
@Suite struct PacedBlobBytesTests {
    /// 100 chunks of 64 KiB, counting how many the consumer has taken.
    private static func source(_ taken: NIOLockedValueBox<Int>) -> BlobBytes {
        BlobBytes(count: 100 << 16) {
            taken.withLockedValue { count -> ByteBuffer? in
                guard count < 100 else { return nil }
                count += 1
                return ByteBuffer(repeating: UInt8(count % 256), count: 1 << 16)
            }
        }
    }

    /// Takes every chunk and hands each to the loop, as a response body's
    /// writer does while its channel is writable: the hand-off returns at once.
    private static func drain(_ bytes: BlobBytes, into loop: any EventLoop, written: NIOLockedValueBox<[UInt8]>) async throws {
        for try await chunk in bytes {
            loop.execute { written.withLockedValue { $0.append(chunk.getInteger(at: 0)!) } }
        }
    }

    /// The loop is blocked while each body is read (300 ms for the paced one). The body as
    /// read takes all 100 chunks meanwhile (the control); the paced body one
    /// at most. Once the loop runs, every chunk is written, in order.
    @Test func aBlockedLoopHoldsTheReaderBack() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            try await Self.readWhileBlocked(group.next())
        } catch {
            try await group.shutdownGracefully()
            throw error
        }
        try await group.shutdownGracefully()
    }

    private static func readWhileBlocked(_ loop: any EventLoop) async throws {
        for paced in [false, true] {
            let taken = NIOLockedValueBox(0)
            let written = NIOLockedValueBox<[UInt8]>([])
            let blocked = ConditionLock(value: 0)
            loop.execute {
                _ = blocked.lock(whenValue: 1); blocked.unlock()
            }
            let source = source(taken)
            let body = paced ? source.paced(by: loop) : source
            let reader = Task { try await drain(body, into: loop, written: written) }
            // The control takes everything while the loop is blocked (waited for, under load); the paced body is given 300 ms.
            let deadline = ContinuousClock.now + (paced ? .milliseconds(300) : .seconds(10))
            while ContinuousClock.now < deadline, taken.withLockedValue({ $0 }) < 100 {
                try await Task.sleep(for: .milliseconds(10))
            }
            let takenWhileBlocked = taken.withLockedValue { $0 }
            blocked.lock()
            blocked.unlock(withValue: 1)
            try await reader.value
            try await loop.submit {}.get()
            if paced {
                #expect(takenWhileBlocked <= 1)
            } else {
                #expect(takenWhileBlocked == 100)
            }
            #expect(written.withLockedValue { $0 } == (1...100).map { UInt8($0 % 256) })
        }
    }
}
