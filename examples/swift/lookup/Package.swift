// swift-tools-version:6.0
// The Swift examples as executables of one package: Lookup, the lookup_customer
// example (`make demo-swift`), and HostModelExample, the same on a model written
// in Swift (`swift run HostModelExample`). `make test-swift` runs both.
import PackageDescription

let ferrule: Target.Dependency = .product(name: "Ferrule", package: "ferrule")

let package = Package(
    name: "FerruleExample",
    dependencies: [.package(path: "../../..")],
    targets: [
        .executableTarget(name: "Lookup", dependencies: [ferrule]),
        .executableTarget(name: "HostModelExample", dependencies: [ferrule]),
    ],
    swiftLanguageModes: [.v6]
)
