import CSystemd

/// The C heap's one setting reachd makes.
package enum Heap {
    /// From now on a buffer of `largeBytes` or more (a bus message a caller made large, a large
    /// kernel dump) is mapped on its own and given back to the system when freed. glibc would
    /// otherwise raise that bound to 32 MiB after the first such free, so the next large buffers
    /// grow the heap and stay resident: one hostile 32 MiB call left reachd 32 MiB larger.
    package static func giveLargeBuffersBack() {
        mallopt(M_MMAP_THRESHOLD, largeBytes)
    }

    package static let largeBytes: Int32 = 1 << 20
}
