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
        .executable(name: "ferry-bench", targets: ["ferry-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .target(
            name: "FerryProtocol"
        ),
        .target(
            name: "Ferry",
            dependencies: [
                "FerryProtocol",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "FerryBenchmarks",
            dependencies: [
                "Ferry",
                .product(name: "GRDB", package: "GRDB.swift"),
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
            dependencies: ["Ferry"]
        ),
        .testTarget(
            name: "FerryProtocolTests",
            dependencies: ["FerryProtocol"]
        ),
        .testTarget(
            name: "FerryTests",
            dependencies: [
                "Ferry",
                "ferry-test-worker",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
