#if canImport(Glibc)
import Glibc
#endif

/// The names in a directory, read with readdir(3): the one place that turns a `dirent` into a
/// name.
package enum DirectoryNames {
    /// The names in `path` that `keep` accepts (never `.` or `..`), in the order read, at most
    /// `limit` of them: a directory anyone can fill costs no more than the limit. A failure to
    /// open or to read names the call and its errno (ENOENT when there is no such directory).
    package static func list(
        _ path: String, limit: Int = .max, keeping keep: (String) -> Bool = { _ in true }
    ) -> Result<[String], SystemError> {
        guard let directory = opendir(path) else { return .failure(SystemError("opendir \(path)")) }
        defer { closedir(directory) }
        var names: [String] = []
        while names.count < limit {
            errno = 0
            guard let entry = readdir(directory) else {
                if errno != 0 { return .failure(SystemError("readdir \(path)")) }
                break
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != ".", name != "..", keep(name) { names.append(name) }
        }
        return .success(names)
    }
}
