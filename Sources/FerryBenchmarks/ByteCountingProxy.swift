import Ferry
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A TCP relay on loopback that counts the bytes it carries each way: what
/// a client and a server really put on the wire, headers and framing
/// included. One thread per direction per connection; for benchmarks only.
///
/// ```swift
/// let proxy = try ByteCountingProxy(target: 8080)
/// // point the client at 127.0.0.1:\(proxy.port)
/// print(proxy.counts)   // (toServer, toClient)
/// ```
final class ByteCountingProxy: @unchecked Sendable {
    // @unchecked: `toServer`/`toClient` are guarded by `lock`; the sockets are only closed by `stop()`.
    let port: Int
    private let target: Int
    private let listener: Int32
    private let lock = NSLock()
    private var toServer = 0
    private var toClient = 0
    private var stopped = false

    init(target: Int) throws {
        self.target = target
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

    var counts: (toServer: Int, toClient: Int) { lock.withLock { (toServer, toClient) } }

    func reset() {
        lock.withLock {
            toServer = 0; toClient = 0
        }
    }

    func stop() {
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
            Thread { [self] in
                relay(from: client, to: server, upstream: true); finish()
            }.start()
            Thread { [self] in
                relay(from: server, to: client, upstream: false); finish()
            }.start()
        }
    }

    private func relay(from source: Int32, to destination: Int32, upstream: Bool) {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 256 << 10, alignment: 16)
        defer {
            buffer.deallocate()
            shutdown(destination, Int32(SHUT_WR))
            shutdown(source, Int32(SHUT_RD))
        }
        while true {
            let read = recv(source, buffer, 256 << 10, 0)
            guard read > 0 else { return }
            lock.withLock { if upstream { toServer += read } else { toClient += read } }
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
