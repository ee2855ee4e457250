// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "reachd",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Reachability", targets: ["Reachability"]),
        // Apple's SCNetworkReachability API over the library, for code written for Apple platforms.
        // Linux only: on Apple platforms the system framework has this name (Reachability.docc/PortingFromSCNetworkReachability.md).
        .library(name: "SystemConfiguration", targets: ["SystemConfiguration"]),
        .executable(name: "reachd", targets: ["reachd"]),
        .executable(name: "reachctl", targets: ["reachctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // Kernel UAPI headers for rtnetlink and setns(2), which glibc declares only under _GNU_SOURCE;
        // no logic (the NLMSG_*/RTA_* arithmetic lives in Swift, bounds-checked: Netlink/).
        .target(name: "CNetlink"),
        // libsystemd: sd-bus, sd-event, sd-daemon, and vtable constructors Swift cannot import.
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // c-ares, the asynchronous DNS resolver behind host checks; no logic.
        .systemLibrary(
            name: "CAres",
            pkgConfig: "libcares",
            providers: [.apt(["libc-ares-dev"])]
        ),
        // libcurl's declarations for the captive-portal API's HTTPS (Connectivity/PortalAPI.swift):
        // loaded with dlopen when first needed, so not linked; typed calls of its variadic setopt.
        .systemLibrary(
            name: "CCurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // The lowest layer (docs/ARCHITECTURE.md): descriptors, errors, the poll loop, threads.
        // A target of its own, so that nothing in it can name a layer above: the compiler keeps it.
        .target(
            name: "ReachabilitySystem",
            dependencies: ["CNetlink", "CSystemd"],
            path: "Sources/Reachability/System"
        ),
        // The values every layer speaks (links, addresses, routes, answers), and the Engine: pure,
        // facts in and state out. Each a target on the one below and nothing else, so the compiler
        // refuses the Engine a socket, a thread or a poll loop, and the values any layer above. (The
        // values escape text with System's `inertExcerpt`: the files that do import it.)
        .target(
            name: "ReachabilityModel",
            dependencies: ["ReachabilitySystem"],
            path: "Sources/Reachability/Model"
        ),
        .target(
            name: "ReachabilityEngine",
            dependencies: ["ReachabilityModel"],
            path: "Sources/Reachability/Engine"
        ),
        // The adapters to the kernel, DNS, HTTP and the bus: each sees the layers below it and its
        // C library, never another adapter or anything above.
        .target(
            name: "ReachabilityNetlink",
            dependencies: ["ReachabilitySystem", "ReachabilityEngine", "CNetlink"],
            path: "Sources/Reachability/Netlink"
        ),
        .target(
            name: "ReachabilityResolver",
            dependencies: ["ReachabilitySystem", "ReachabilityModel", "CAres", "CNetlink"],
            path: "Sources/Reachability/Resolver"
        ),
        .target(
            name: "ReachabilityConnectivity",
            dependencies: ["ReachabilitySystem", "ReachabilityModel", "CCurl", "CNetlink"],
            path: "Sources/Reachability/Connectivity"
        ),
        .target(
            name: "ReachabilityBus",
            dependencies: ["ReachabilitySystem", "ReachabilityModel", "CSystemd"],
            path: "Sources/Reachability/Bus"
        ),
        // The core (one loop's sequence of the kernel's facts, host checks, the stall watch) on the
        // Engine and the adapters but the bus; reachd's client on the bus. Neither names the other.
        .target(
            name: "ReachabilityCore",
            dependencies: ["ReachabilityNetlink", "ReachabilityResolver", "ReachabilityConnectivity", "CNetlink"],
            path: "Sources/Reachability/Core"
        ),
        .target(
            name: "ReachabilityClient",
            dependencies: ["ReachabilityBus", "ReachabilityConnectivity", "CSystemd"],
            path: "Sources/Reachability/Client"
        ),
        // The library a program imports: the monitors, in-process or through reachd, over all of it.
        .target(
            name: "Reachability",
            dependencies: ["ReachabilityCore", "ReachabilityClient"],
            exclude: [
                "System", "Model", "Engine", "Netlink", "Resolver", "Connectivity", "Bus", "Core", "Client",
                "Output", "Metrics", "Config",
            ]
        ),
        // The layers above the library's programs' API: renderings, metrics, then reachd.conf.
        // Targets of their own, so that nothing below can name them.
        .target(
            name: "ReachabilityOutput",
            dependencies: ["Reachability"],
            path: "Sources/Reachability/Output"
        ),
        .target(
            name: "ReachabilityMetrics",
            dependencies: ["ReachabilityOutput"],
            path: "Sources/Reachability/Metrics"
        ),
        .target(
            name: "ReachabilityConfig",
            dependencies: ["ReachabilityMetrics"],
            path: "Sources/Reachability/Config"
        ),
        .target(
            name: "SystemConfiguration",
            dependencies: ["Reachability", "ReachabilityConfig"]
        ),
        .executableTarget(
            name: "reachd",
            dependencies: ["Reachability", "ReachabilityConfig"]
        ),
        .executableTarget(
            name: "reachctl",
            dependencies: [
                "Reachability", "ReachabilityConfig",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Benchmarks are a program, not timed tests: see BENCHMARKS.md.
        .executableTarget(
            name: "reachbench",
            dependencies: ["Reachability", "ReachabilityConfig"]
        ),
        .testTarget(
            name: "ReachabilityTests",
            dependencies: ["Reachability", "ReachabilityConfig", "SystemConfiguration"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
