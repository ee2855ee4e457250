import Foundation
import Testing
@testable import Reachability

/// A network's captive-portal API for tests: a CA made with openssl at test time, a certificate
/// for `address` (and the name `probe.test`) signed by it, and python3's http.server over TLS in
/// `ns` on port 8443. `/api` answers what `answer(_:type:)` last wrote (or, while the directory
/// holds a file `ends` with a Unix time, a session not captive with the seconds left until
/// then, counting down as a real one does); `/generate_204` and
/// `/portal` (a redirect to a login page) answer an https connectivity probe; the other paths
/// answer as a hostile server would.
/// Stopped and removed on release.
final class PortalServer: @unchecked Sendable {
    let directory: String
    let address: String
    private var server: ChildProcess?
    var caFile: String { directory + "/ca.pem" }
    var api: String { "https://\(address):8443/api" }
    func url(_ path: String) -> String { "https://\(address):8443\(path)" }

    init(in ns: TestNamespace, address: String) throws {
        directory = try makeScratchDirectory("portal-server")
        self.address = address
        try Self.makeCertificates(in: directory, address: address)
        try answer(#"{"captive": false}"#)
        try Self.script.write(toFile: directory + "/server.py", atomically: true, encoding: .utf8)
        server = try ChildProcess("/usr/sbin/ip", ["netns", "exec", ns.name, "/usr/bin/python3", directory + "/server.py", directory, address])
        _ = try server?.firstLine(timeout: .seconds(10))  // "listening"
    }

    deinit {
        server?.kill()
        removeTree(directory)
    }

    /// What `/api` answers from now on.
    func answer(_ body: String, type: String = "application/captive+json") throws {
        try (type + "\n" + body).write(toFile: directory + "/answer.tmp", atomically: false, encoding: .utf8)
        rename(directory + "/answer.tmp", directory + "/answer")
    }

    /// From now on `/api` answers a session that is not captive and ends `seconds` from now,
    /// counting down (the `ends` file), whatever `answer(_:type:)` wrote.
    func sessionEnds(in seconds: Int) throws {
        try "\(Int(Date().timeIntervalSince1970) + seconds)".write(toFile: directory + "/ends.tmp", atomically: false, encoding: .utf8)
        rename(directory + "/ends.tmp", directory + "/ends")
    }

    /// The requests `/api` had so far.
    var asked: Int { (try? String(contentsOfFile: directory + "/asked", encoding: .utf8))?.count ?? 0 }

    static func makeCertificates(in directory: String, address: String) throws {
        let openssl = "/usr/bin/openssl"
        try run(openssl, ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-subj", "/CN=reachd test CA", "-keyout", directory + "/ca.key", "-out", directory + "/ca.pem"])
        try run(openssl, ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=\(address)",
            "-keyout", directory + "/server.key", "-out", directory + "/server.csr"])
        try "subjectAltName=IP:\(address),DNS:probe.test\n".write(toFile: directory + "/san.ext", atomically: true, encoding: .utf8)
        try run(openssl, ["x509", "-req", "-in", directory + "/server.csr", "-CA", directory + "/ca.pem", "-CAkey", directory + "/ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", directory + "/san.ext", "-out", directory + "/server.pem"])
    }

    static let script = #"""
import http.server, ssl, sys, time, os
directory, address = sys.argv[1], sys.argv[2]
class Handler(http.server.BaseHTTPRequestHandler):
    def send(self, status, body, type="application/captive+json", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", type)
        for k, v in extra: self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        if self.path == "/api":
            with open(os.path.join(directory, "asked"), "a") as f: f.write("x")
            with open(os.path.join(directory, "answer"), "rb") as f: type, body = f.read().split(b"\n", 1)
            # A session that runs out as a real one does: `ends` holds its end (Unix seconds).
            if os.path.exists(os.path.join(directory, "ends")):
                with open(os.path.join(directory, "ends")) as f: left = max(0, round(float(f.read()) - time.time()))
                type, body = b"application/captive+json", b'{"captive": false, "seconds-remaining": %d}' % left
            self.send(200, body, type.decode())
        elif self.path == "/generate_204":
            self.send_response(204)
            self.end_headers()
        elif self.path == "/portal":
            self.send(302, b"", "text/html", extra=[("Location", "https://%s:8443/login" % address)])
        elif self.path == "/huge":
            self.send(200, b'{"captive": false, "x": "' + b"a" * (1 << 20) + b'"}')
        elif self.path == "/slow":
            time.sleep(30)
            self.send(200, b'{"captive": false}')
        elif self.path == "/loop":
            self.send(302, b"", extra=[("Location", "/loop")])
        elif self.path == "/type":
            self.send(200, b'{"captive": false}', "text/html")
        elif self.path == "/bad":
            self.send(200, b'{"captive": false,')
        elif self.path == "/control":
            self.send(200, b'{"captive": true, "user-portal-url": "https://login.test/\\u001b[31m"}')
        else:
            self.send(404, b"")
    def log_message(self, *args): pass
server = http.server.ThreadingHTTPServer((address, 8443), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(os.path.join(directory, "server.pem"), os.path.join(directory, "server.key"))
server.socket = context.wrap_socket(server.socket, server_side=True)
print("listening", flush=True)
server.serve_forever()
"""#
}
