#if canImport(Glibc)
import Glibc
#endif

/// A file-system call that failed while a test built its fixture.
struct SetupFailure: Error, CustomStringConvertible {
    let call: String
    let path: String
    let code: Int32
    var description: String { "\(call)(\(path)) failed: errno \(code)" }
}

/// A new empty directory `/tmp/PREFIX-XXXXXX`; remove it with `removeTree`.
func makeScratchDirectory(_ prefix: String) throws -> String {
    var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw SetupFailure(call: "mkdtemp", path: "/tmp", code: errno) }
    return String(cString: made)
}

/// rm -rf without following symlinks (lstat, and unlink for anything that is not a directory).
func removeTree(_ path: String) {
    var info = stat()
    guard lstat(path, &info) == 0 else { return }
    if info.st_mode & S_IFMT == S_IFDIR, let directory = opendir(path) {
        var children: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != ".." { children.append(name) }
        }
        closedir(directory)
        for child in children { removeTree(path + "/" + child) }
        rmdir(path)
    } else {
        unlink(path)
    }
}
