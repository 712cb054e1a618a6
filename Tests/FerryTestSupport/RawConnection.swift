import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A plain TCP connection to a loopback port, driven byte by byte: for
/// clients that misbehave on purpose (slow headers, half a body, hanging
/// up) and for holding many connections open at once.
public final class RawConnection: @unchecked Sendable {
    // @unchecked: each connection is used by one task at a time.
    private var descriptor: Int32

    public init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            closeSocket(descriptor)
            throw Failure("connect: errno \(code)")
        }
    }

    /// Sends `text`; `false` when the server has closed the connection.
    @discardableResult
    public func send(_ text: String) -> Bool {
        send(bytes: Array(text.utf8))
    }

    /// Sends `bytes` as they are; `false` when the server has closed the connection.
    @discardableResult
    public func send(bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            sendBytes(descriptor, buffer.baseAddress, buffer.count) == buffer.count
        }
    }

    /// What arrives within `timeout`, and whether the server closed the
    /// connection (reading stops at the close).
    public func read(for timeout: Duration, untilContains marker: String? = nil) -> (text: String, closed: Bool) {
        let (bytes, closed) = readBytes(
            for: timeout,
            until: marker.map { marker in
                { String(decoding: $0, as: UTF8.self).contains(marker) }
            })
        return (String(decoding: bytes, as: UTF8.self), closed)
    }

    /// The bytes that arrive within `timeout`, or until `until` holds of
    /// what arrived, and whether the server closed the connection.
    public func readBytes(for timeout: Duration, until: (([UInt8]) -> Bool)? = nil) -> (bytes: [UInt8], closed: Bool) {
        var received: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let left = deadline - ContinuousClock.now
            let milliseconds = Int32(max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, milliseconds) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 16_384)
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return (received, true) }
            received += chunk[0..<count]
            if let until, until(received) { break }
        }
        return (received, false)
    }

    /// Waits until the server closes the connection; how long that took,
    /// or `nil` if it stayed open for `timeout`.
    public func waitForClose(within timeout: Duration) -> Duration? {
        let start = ContinuousClock.now
        let result = read(for: timeout)
        return result.closed ? ContinuousClock.now - start : nil
    }

    public func close() {
        guard descriptor >= 0 else { return }
        closeSocket(descriptor)
        descriptor = -1
    }

    deinit {
        close()
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }
}

private func closeSocket(_ descriptor: Int32) {
    #if canImport(Glibc)
        _ = Glibc.close(descriptor)
    #else
        _ = Darwin.close(descriptor)
    #endif
}

private func sendBytes(_ descriptor: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
    #if canImport(Glibc)
        Glibc.send(descriptor, bytes, count, Int32(MSG_NOSIGNAL))
    #else
        Darwin.send(descriptor, bytes, count, 0)
    #endif
}
