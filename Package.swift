// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "Ferry",
    platforms: [
        .macOS(.v14),
        .iOS(.v17),
        .tvOS(.v17),
        .visionOS(.v1),
    ],
    products: [
        .library(name: "FerryProtocol", targets: ["FerryProtocol"]),
        .library(name: "Ferry", targets: ["Ferry"]),
        .library(name: "FerryHTTPClient", targets: ["FerryHTTPClient"]),
        .library(name: "FerryAttachmentEncryption", targets: ["FerryAttachmentEncryption"]),
        .library(name: "FerryTesting", targets: ["FerryTesting"]),
        .library(name: "FerryServer", targets: ["FerryServer"]),
        .library(name: "FerryPostgres", targets: ["FerryPostgres"]),
        .executable(name: "ferry-server", targets: ["ferry-server"]),
        .executable(name: "ferry-bench", targets: ["ferry-bench"]),
        .executable(name: "ferry-notes", targets: ["ferry-notes"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // `ferry-server --otel-endpoint`: spans exported over OTLP/HTTP (no gRPC).
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // gzip and deflate for request and response bodies (zlib underneath).
        .package(url: "https://github.com/adam-fowler/compress-nio", from: "1.5.0"),
        // `ferry-server`'s settings: a JSON or YAML file, FERRY_* variables and flags.
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0", traits: [.defaults, "YAML"]),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        // `swift package generate-documentation`: the DocC catalogs, checked in `.ci/run`.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // SHA-256's block function in C, with x86-64's SHA instructions where the processor has them.
        .target(
            name: "CFerrySHA256"
        ),
        .target(
            name: "FerryProtocol",
            dependencies: ["CFerrySHA256"]
        ),
        // What the device library and the server's embedded store share
        // about SQLite: values bound straight through its C API, and SQL
        // text built for multi-row statements. Not a product: `package` API.
        .target(
            name: "FerrySQLite",
            dependencies: [
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        .target(
            name: "Ferry",
            dependencies: [
                "FerryProtocol",
                "FerrySQLite",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The AsyncHTTPClient transport, for Linux and server-side Swift: a
        // product of its own, so `Ferry` links no SwiftNIO.
        .target(
            name: "FerryHTTPClient",
            dependencies: [
                "Ferry",
                "FerryProtocol",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // AES-GCM for attachment files at rest: a product of its own, so
        // `Ferry` links no crypto library.
        .target(
            name: "FerryAttachmentEncryption",
            dependencies: [
                "Ferry",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // What an app's tests use, as HummingbirdTesting is Hummingbird's:
        // the real server without a socket (`InMemorySyncServer`), transports
        // that misbehave on purpose or watch blob transfers, and a seeded
        // generator. Kept out of `Ferry`, so an app ships none of it.
        .target(
            name: "FerryTesting",
            dependencies: [
                "Ferry",
                "FerryProtocol",
                // The in-memory server double: the real server's router, answered without a socket.
                "FerryServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "FerryServer",
            dependencies: [
                "FerryProtocol",
                "FerrySQLite",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for the WAL hook (`WALCheckpointer`).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                // TLS with HTTP/2 and HTTP/1.1 chosen by ALPN (`--tls-cert`, `--tls-key`).
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CompressNIO", package: "compress-nio"),
                // Metrics are recorded through swift-metrics; Prometheus is the backend that serves them.
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                // Spans for requests, pushes, merges and store calls, for whatever tracer the app bootstraps.
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                // Fetches the identity provider's keys (JWKS).
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ],
            resources: [.copy("OpenAPI/openapi.json")]
        ),
        // The PostgreSQL store, for many server instances: a driver of its
        // own, as Hummingbird's are, so a server on the embedded store links
        // no PostgresNIO.
        .target(
            name: "FerryPostgres",
            dependencies: [
                "FerryServer",
                "FerryProtocol",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "ferry-server",
            dependencies: [
                "FerryServer",
                "FerryPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "OTel", package: "swift-otel"),
            ]
        ),
        // The notes app: its data layer (schema, queries, sync, conflicts,
        // import and export) and its command line.
        .target(
            name: "FerryNotes",
            dependencies: [
                "Ferry",
                "FerryHTTPClient",
                "FerryProtocol",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "ferry-notes",
            dependencies: [
                "FerryNotes",
                "Ferry",
                "FerryProtocol",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "FerryBenchmarks",
            dependencies: [
                "Ferry",
                "FerryTesting",
                "FerryNotes",
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                "FerryHTTPClient",
                "FerryServer",
                "FerryPostgres",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "ferry-bench",
            dependencies: [
                "FerryBenchmarks",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Child process used by the crash-safety, migration-kill and
        // multi-process concurrency tests: they need a second OS process
        // writing the same database file.
        .executableTarget(
            name: "ferry-test-worker",
            dependencies: ["Ferry", "FerryHTTPClient"]
        ),
        .testTarget(
            name: "FerryProtocolTests",
            dependencies: [
                "FerryProtocol",
                "FerryTesting",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "FerryServerTests",
            dependencies: [
                "FerryServer",
                "FerryTesting",
                "FerryPostgres",
                "FerryTestSupport",
                "ferry-server",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // What several test targets share: temporary directories, the
        // `ferry-server` child process, and throwaway PostgreSQL databases.
        .target(
            name: "FerryTestSupport",
            dependencies: [
                "Ferry",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Tests/FerryTestSupport"
        ),
        // The client sync engine against the real server: in process on a
        // loopback socket, and as a `ferry-server` child process.
        .testTarget(
            name: "FerrySyncTests",
            dependencies: [
                "Ferry",
                "FerryBenchmarks",
                "FerryTesting",
                "FerryAttachmentEncryption",
                "FerryHTTPClient",
                "FerryTestSupport",
                "FerryServer",
                "FerryPostgres",
                "ferry-server",
                "ferry-test-worker",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The notes app: its schema and queries, and its binary driven as a
        // user drives it against a `ferry-server` child process.
        .testTarget(
            name: "FerryNotesTests",
            dependencies: [
                "Ferry",
                "FerryNotes",
                "FerryTestSupport",
                "ferry-notes",
                "ferry-server",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "FerryTests",
            dependencies: [
                "Ferry",
                "FerrySQLite",
                "FerryAttachmentEncryption",
                "FerryTestSupport",
                "ferry-test-worker",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
