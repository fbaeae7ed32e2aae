// swift-tools-version:6.0
// The lookup_customer example as a Swift executable: `make demo-swift`.
import PackageDescription

let package = Package(
    name: "FerruleExample",
    dependencies: [.package(path: "../../../bindings/swift")],
    targets: [
        .executableTarget(name: "Lookup", dependencies: [.product(name: "Ferrule", package: "swift")])
    ],
    swiftLanguageModes: [.v6]
)
