@testable import Ferry
import FerryHTTPClient
import FerryProtocol
import FerryTestSupport
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Testing

/// Devices that compress (the AsyncHTTPClient transport by default), that
/// do not, and that use URLSession, against one server on either store:
/// every replica ends the same, row for row.
@Suite(.postgresTurns) struct CompressionSyncTests {
    @Test(arguments: StoreKind.available) func compressedAndPlainClientsConverge(_ kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let directory = try TemporaryDirectory()
            let transports: [(String, (URL) -> any SyncTransport)] = [
                ("gzip", { HTTPSyncTransport(baseURL: $0, requestTimeout: .seconds(10)) }),
                ("plain", { HTTPSyncTransport(baseURL: $0, requestTimeout: .seconds(10), compression: false) }),
                ("urlsession", { URLSessionSyncTransport(baseURL: $0, requestTimeout: .seconds(10)) }),
            ]
            var devices: [Device] = []
            for (name, make) in transports {
                devices.append(
                    try await Device.make(name, user: "alice", server: server, directory: directory, transport: { _ in make(server.baseURL) }))
            }
            // Each writes enough that pushes and pulls pass the 1 KiB floor, then edits another's rows.
            for (index, device) in devices.enumerated() {
                let name = transports[index].0
                for row in 0..<300 {
                    try device.execute(
                        "INSERT INTO note(id, title, body) VALUES (?, ?, ?)",
                        ["\(name)-\(row)", "note \(row) from \(name)", String(repeating: "word \(row) ", count: 20)])
                }
                try await device.engine.sync()
            }
            for device in devices { try await device.engine.sync() }
            for (index, device) in devices.enumerated() {
                let other = transports[(index + 1) % transports.count].0
                try device.execute("UPDATE note SET title = 'edited by ' || ? WHERE id LIKE ? || '-1%'", [transports[index].0, other])
                try await device.engine.sync()
            }
            for _ in 0..<2 { for device in devices { try await device.engine.sync() } }
            // The server did compress: a pull asked for gzip comes gzipped, and the transports decoded it.
            var request = URLRequest(url: server.baseURL.appending(path: "v1/pull"))
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue("gzip", forHTTPHeaderField: "Accept-Encoding")
            request.setValue("Bearer \(try await server.token("alice"))", forHTTPHeaderField: "Authorization")
            request.httpBody = Data(#"{"clientID":"probe","scopes":[{"scope":"user:alice"}]}"#.utf8)
            let (_, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Encoding") == "gzip")
            let replicas = try devices.map { try $0.notes() }
            #expect(replicas[0].count == 900)
            #expect(replicas[0] == replicas[1] && replicas[1] == replicas[2])
            #expect(replicas[0]["plain-10"]?.title == "edited by gzip")
        }
    }
}
