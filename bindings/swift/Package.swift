// swift-tools-version:6.0
// ferrule's Swift binding: CFerrule (a module map over include/ferrule.h) and
// Ferrule (the Swift API, Swift 6 language mode: strict concurrency checking).
// FERRULE_LIB_DIR names the directory holding libferrule (default: the
// checkout's target/release).
import Foundation
import PackageDescription

let libraryDirectory = ProcessInfo.processInfo.environment["FERRULE_LIB_DIR"] ?? "../../target/release"

let package = Package(
    name: "Ferrule",
    products: [.library(name: "Ferrule", targets: ["Ferrule"])],
    targets: [
        .systemLibrary(name: "CFerrule", path: "Sources/CFerrule"),
        .target(
            name: "Ferrule",
            dependencies: ["CFerrule"],
            linkerSettings: [
                .unsafeFlags(["-L\(libraryDirectory)", "-Xlinker", "-rpath", "-Xlinker", libraryDirectory])
            ]
        ),
        .testTarget(name: "FerruleTests", dependencies: ["Ferrule", "CFerrule"]),
    ],
    swiftLanguageModes: [.v6]
)
