// swift-tools-version:6.0
// A program that prints the host's path each time it changes, with the library's PathMonitor used
// as Network.framework's NWPathMonitor is. It depends on this repository by path: in a project of
// your own, name your clone instead (docs/library.md).
import PackageDescription

// SwiftPM names a package depended on by path after its folder: "reachd" in a clone made as the
// docs say, whatever this one's is called (a worktree, a CI checkout).
let repository = String(#filePath.split(separator: "/").dropLast(3).last!)

let package = Package(
    name: "WatchPath",
    dependencies: [.package(path: "../..")],
    targets: [
        .executableTarget(name: "watch-path", dependencies: [.product(name: "Reachability", package: repository)]),
    ],
    swiftLanguageModes: [.v6]
)
