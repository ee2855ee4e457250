// swift-tools-version:6.0
// A program written against Apple's SCNetworkReachability API, built unchanged on Linux with the
// repository's SystemConfiguration module. It depends on this repository by path: in a project of
// your own, name your clone instead (docs/library.md).
import PackageDescription

// SwiftPM names a package depended on by path after its folder: "reachd" in a clone made as the
// docs say, whatever this one's is called (a worktree, a CI checkout).
let repository = String(#filePath.split(separator: "/").dropLast(3).last!)

let package = Package(
    name: "ReachabilityCallback",
    dependencies: [.package(path: "../..")],
    targets: [
        .executableTarget(name: "reachability-callback", dependencies: [.product(name: "SystemConfiguration", package: repository)]),
    ],
    swiftLanguageModes: [.v6]
)
