import Ferry
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A TCP relay on loopback that counts the bytes it carries each way: what
/// a client and a server really put on the wire, headers and framing
/// included. One thread per direction per connection; for benchmarks and
/// tests only. With `capturing`, it also keeps what each connection carried
/// to the client, to count how often some bytes were sent.
///
/// ```swift
/// let proxy = try ByteCountingProxy(target: 8080, capturing: true)
/// // point the client at 127.0.0.1:\(proxy.port)
/// print(proxy.counts)                        // (toServer, toClient)
/// print(proxy.occurrences(of: "row-marker"))  // times those bytes went to the client
/// ```
package final class ByteCountingProxy: @unchecked Sendable {
    // @unchecked: `toServer`/`toClient`/`captured` are guarded by `lock`; the sockets are only closed by `stop()`.
    package let port: Int
    private let target: Int
    private let listener: Int32
    private let lock = NSLock()
    private var toServer = 0
    private var toClient = 0
    private var stopped = false
    private let capturing: Bool
    /// What each connection carried to the client, by connection number.
    private var captured: [Int: [UInt8]] = [:]
    private var connections = 0

    package init(target: Int, capturing: Bool = false) throws {
        self.target = target
        self.capturing = capturing
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw BenchmarkError("proxy: socket failed") }
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 64) == 0 else { throw BenchmarkError("proxy: cannot listen") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    package var counts: (toServer: Int, toClient: Int) { lock.withLock { (toServer, toClient) } }

    /// How many times `marker`'s bytes went to the client, over every
    /// connection (with `capturing`; 0 without).
    package func occurrences(of marker: String) -> Int {
        let needle = Array(marker.utf8)
        return lock.withLock { captured.values.reduce(0) { $0 + Self.count(needle, in: $1) } }
    }

    private static func count(_ needle: [UInt8], in haystack: [UInt8]) -> Int {
        guard !needle.isEmpty, haystack.count >= needle.count else { return 0 }
        var found = 0
        var index = 0
        while index + needle.count <= haystack.count {
            if haystack[index] == needle[0], haystack[index..<index + needle.count].elementsEqual(needle) {
                found += 1
                index += needle.count
            } else {
                index += 1
            }
        }
        return found
    }

    package func reset() {
        lock.withLock {
            toServer = 0; toClient = 0
            captured = [:]
        }
    }

    package func stop() {
        lock.withLock { stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: target)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { close(client); close(server); continue }
            // Both sockets close once both directions are done.
            let directionsLeft = Locked(2)
            let finish: @Sendable () -> Void = {
                if directionsLeft.withLock({
                    $0 -= 1; return $0 == 0
                }) {
                    close(client); close(server)
                }
            }
            let connection = lock.withLock {
                connections += 1
                return connections
            }
            Thread { [self] in
                relay(from: client, to: server, upstream: true, connection: connection); finish()
            }.start()
            Thread { [self] in
                relay(from: server, to: client, upstream: false, connection: connection); finish()
            }.start()
        }
    }

    private func relay(from source: Int32, to destination: Int32, upstream: Bool, connection: Int) {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 256 << 10, alignment: 16)
        defer {
            buffer.deallocate()
            shutdown(destination, Int32(SHUT_WR))
            shutdown(source, Int32(SHUT_RD))
        }
        while true {
            let read = recv(source, buffer, 256 << 10, 0)
            guard read > 0 else { return }
            lock.withLock {
                if upstream {
                    toServer += read
                } else {
                    toClient += read
                    if capturing {
                        captured[connection, default: []].append(contentsOf: UnsafeRawBufferPointer(start: buffer, count: read))
                    }
                }
            }
            var sent = 0
            while sent < read {
                let written = send(destination, buffer + sent, read - sent, Int32(MSG_NOSIGNAL))
                guard written > 0 else { return }
                sent += written
            }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
