/// A raw D-Bus client's first lines in Python, for the hostile-caller tests: no client library
/// would send what they send (32 MiB arguments, descriptors where no argument takes one). Before
/// it the script sets `address` and `negotiate_fds`; after it, `sock` is connected, authenticated
/// (EXTERNAL, and NEGOTIATE_UNIX_FD when asked) and has said Hello, and `pad`, `string`,
/// `signature`, `message` (with a UNIX_FDS header field when `unix_fds` is given) and `receive`
/// build and read messages.
enum RawDBusClient {
    static let preamble = #"""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(address.split("unix:path=", 1)[1].split(",")[0])
        def line():
            data = b""
            while not data.endswith(b"\r\n"): data += sock.recv(1)
            return data
        sock.sendall(b"\0AUTH EXTERNAL " + str(os.getuid()).encode().hex().encode() + b"\r\n")
        assert line().startswith(b"OK")
        if negotiate_fds:
            sock.sendall(b"NEGOTIATE_UNIX_FD\r\n")
            assert line().startswith(b"AGREE_UNIX_FD")
        sock.sendall(b"BEGIN\r\n")
        def pad(data, n): return data + b"\0" * (-len(data) % n)
        def string(data, text):
            data = pad(data, 4); raw = text.encode()
            return data + struct.pack("<I", len(raw)) + raw + b"\0"
        def signature(data, text): return data + bytes([len(text)]) + text.encode() + b"\0"
        def message(serial, destination, path, interface, member, sig, body, unix_fds=0):
            fields = b""
            for code, kind, value in [(1, "o", path), (2, "s", interface), (3, "s", member), (6, "s", destination), (8, "g", sig), (9, "u", unix_fds)]:
                if not value: continue
                fields = pad(fields, 8) + bytes([code])
                fields = signature(fields, kind)
                if kind == "u": fields = pad(fields, 4) + struct.pack("<I", value)
                elif kind == "g": fields = signature(fields, value)
                else: fields = string(fields, value)
            head = b"l\x01\x00\x01" + struct.pack("<III", len(body), serial, len(fields)) + fields
            return pad(head, 8) + body
        def receive():
            head = b""
            while len(head) < 16:
                got = sock.recv(16 - len(head))
                if not got: raise EOFError
                head += got
            body_length, serial, fields_length = struct.unpack("<III", head[4:16])
            rest = -(-fields_length // 8) * 8 + body_length
            data = b""
            while len(data) < rest: data += sock.recv(rest - len(data))
            return head[1], head + data
        sock.sendall(message(1, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello", "", b""))
        receive()
        """#
}
