// swift-tools-version:6.0
// W1 and W2 of bench/workloads.json with the tool written in Swift:
// `make bench-swift`. Nothing is asserted; it prints the cost per round and per call.
import PackageDescription

let package = Package(
    name: "FerruleBench",
    dependencies: [.package(path: "../../..")],
    targets: [
        .executableTarget(name: "SwiftBench", dependencies: [.product(name: "Ferrule", package: "ferrule")])
    ],
    swiftLanguageModes: [.v6]
)
