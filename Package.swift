// swift-tools-version:6.0
// ferrule's Swift package, at the repository's root so that SwiftPM takes it as a
// dependency by URL:
//
//     .package(url: "https://github.com/ferrule-dev/ferrule", from: "0.1.0")
//
// CFerrule is a module map over the C header, linking the installed libferrule it
// finds through pkg-config (ferrule.pc: `make install`, a release tarball with its
// lib/pkgconfig on PKG_CONFIG_PATH, or a distribution's package), or on Apple
// machines a release's XCFramework; Ferrule is the Swift API (Swift 6 language
// mode: strict concurrency checking). No unsafe flags, which SwiftPM refuses in
// dependencies.
import PackageDescription

/// The zipped XCFramework of a release (`make xcframework` on macOS writes it and
/// prints its checksum), which a release commit names here; nil in between.
let appleFramework: (url: String, checksum: String)? = nil

/// The C module: on Apple machines the release's XCFramework when there is one,
/// else (and always on Linux) the installed library found through pkg-config.
let cFerrule: Target = {
    #if canImport(Darwin)
        if let framework = appleFramework {
            return .binaryTarget(name: "CFerrule", url: framework.url, checksum: framework.checksum)
        }
    #endif
    return .systemLibrary(name: "CFerrule", path: "bindings/swift/Sources/CFerrule", pkgConfig: "ferrule")
}()

let package = Package(
    name: "Ferrule",
    products: [.library(name: "Ferrule", targets: ["Ferrule"])],
    targets: [
        cFerrule,
        .target(name: "Ferrule", dependencies: ["CFerrule"], path: "bindings/swift/Sources/Ferrule"),
        .testTarget(
            name: "FerruleTests",
            dependencies: ["Ferrule", "CFerrule"],
            path: "bindings/swift/Tests/FerruleTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
