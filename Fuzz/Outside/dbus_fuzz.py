#!/usr/bin/python3
"""Hostile D-Bus messages to a running reachd, from outside (issue 24): wrong signatures,
huge strings, nested variants, unknown interfaces and members, Set on every property,
file descriptors, on the service object, its watch objects and paths that do not exist.

Usage: dbus_fuzz.py ADDRESS PID COUNT SEED

Each message goes on one of a few connections (one is closed and replaced now and then,
so watches and host checks of departed callers are cleaned up as it runs); a reply, an
error or a timeout are all fine. What is not fine, checked at the end: reachd gone, a
wrong answer to plain calls afterwards, or more file descriptors than before (taken after
the fuzzing connections are closed). Prints one line of figures; exits 1 on a failure.
Repeatable: the same SEED sends the same messages.
"""
import os
import random
import sys
import time

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

NAME = "org.reachd.Reachability1"
PATH = "/org/reachd/Reachability1"
INTERFACE = "org.reachd.Reachability1"
WATCH = "org.reachd.Reachability1.Watch"
PROPERTIES = "org.freedesktop.DBus.Properties"
METHODS = ["GetStatus", "ListInterfaces", "CheckAddress", "CheckHost", "Explain", "Watch", "Unwatch", "Validate", "GetMetrics"]
SERVICE_PROPERTIES = ["Flags", "State", "PrimaryInterface", "AvailableInterfaces", "UnderlyingInterface", "Connectivity",
                      "Portal", "AnnouncedPortal", "ValidatedInterfaces", "Stalled", "Generation"]
WATCH_PROPERTIES = ["Target", "Flags", "Interface", "Reason"]
INTERFACES = [INTERFACE, WATCH, PROPERTIES, "org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.Peer",
              "org.reachd.Nope", "", "a.b", "org.freedesktop.NetworkManager"]
BASIC = "ybnqiuxtdsogh"


def fd_count(pid):
    """reachd's open file descriptors; None when this user may not look (the caller script then does)."""
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except PermissionError:
        return None


def connect(address):
    flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
    return Gio.DBusConnection.new_for_address_sync(address, flags, None, None)


class Fuzzer:
    def __init__(self, rng):
        self.rng = rng
        self.watches = [PATH + "/watch/1", PATH + "/watch/0", PATH + "/watch/-1", PATH + "/watch/99999999999999999999"]

    def string(self):
        r = self.rng.random()
        if r < 0.05:
            return "a" * self.rng.choice([65, 254, 4096, 100_000])  # past every documented bound
        if r < 0.10:
            return "".join(chr(self.rng.choice([1, 2, 27, 127, 0x85, 0x202E, 0xFEFF, 0x1F600])) for _ in range(self.rng.randint(1, 40)))
        if r < 0.15:
            return self.rng.choice(["fe80::1%lo", "fe80::1%nonexist", "[::1]", "::ffff:1.2.3.4", "127.1", "0x7f.0.0.1",
                                    "-0", "+1", "host.123", "a..b", "-a.b", "localhost", "x.localhost.", "0.0.0.0", "::"])
        alphabet = "abcdefghijklmnopqrstuvwxyz0123456789.-_:%[]/ \t"
        return "".join(self.rng.choice(alphabet) for _ in range(self.rng.randint(0, 30)))

    def signature(self, depth=0):
        r = self.rng.random()
        if depth > 3 or r < 0.6:
            return self.rng.choice(BASIC.replace("h", "") if self.rng.random() < 0.9 else BASIC)
        if r < 0.75:
            return "a" + self.signature(depth + 1)
        if r < 0.85:
            return "(" + "".join(self.signature(depth + 1) for _ in range(self.rng.randint(1, 3))) + ")"
        if r < 0.95:
            return "v"
        return "a{s" + self.signature(depth + 1) + "}"

    def value(self, signature, fds):
        """A GLib.Variant of `signature` with hostile contents."""
        rng = self.rng
        if signature == "s":
            return GLib.Variant("s", self.string())
        if signature == "o":
            return GLib.Variant("o", rng.choice(self.watches + ["/", PATH, "/a/b"]))
        if signature == "g":
            return GLib.Variant("g", rng.choice(["", "s", "a{sv}", "(ii)"]))
        if signature == "h":
            fds.append(rng.choice(["pipe", "devnull", "socket"]))
            return GLib.Variant("h", len(fds) - 1)
        if signature in "ybnqiuxt":
            bounds = {"y": (0, 255), "b": (0, 1), "n": (-2**15, 2**15 - 1), "q": (0, 2**16 - 1), "i": (-2**31, 2**31 - 1),
                      "u": (0, 2**32 - 1), "x": (-2**63, 2**63 - 1), "t": (0, 2**64 - 1)}[signature]
            edge = rng.choice([bounds[0], bounds[1], 0, 1, 300000, 300001, rng.randint(*bounds)])
            return GLib.Variant(signature, bool(edge) if signature == "b" else edge)
        if signature == "d":
            return GLib.Variant("d", rng.choice([0.0, -1.0, float("inf"), float("nan"), 1e308]))
        if signature == "v":
            inner = self.signature(1) if rng.random() < 0.7 else "v"
            return GLib.Variant("v", self.value(inner, fds))
        if signature.startswith("a{"):
            inner = signature[3:-1]
            return GLib.Variant(signature, {self.string(): self.value(inner, fds).unpack() if inner != "v" else self.value("v", fds).get_variant()
                                            for _ in range(rng.randint(0, 3))})
        if signature.startswith("a"):
            inner = signature[1:]
            count = rng.choice([0, 1, 3, 1000]) if inner in "ybnqiuxtd" else rng.randint(0, 3)
            items = [self.value(inner, fds) for _ in range(count)]
            return GLib.Variant.new_array(GLib.VariantType(inner), items) if items else GLib.Variant(signature, [])
        if signature.startswith("("):
            return GLib.Variant.new_tuple(*[self.value(part, fds) for part in split(signature[1:-1])])
        raise ValueError(signature)

    def deeply_nested(self):
        depth = self.rng.choice([10, 60, 63, 64, 100])
        value = GLib.Variant("s", "deep")
        for _ in range(depth):
            value = GLib.Variant("v", value)
        return GLib.Variant.new_tuple(value)

    def message(self):
        """One method call: (path, interface, member, body or None, fd kinds)."""
        rng = self.rng
        fds = []
        r = rng.random()
        path = PATH if rng.random() < 0.7 else rng.choice(self.watches + ["/", "/org/reachd", PATH + "/x"])
        if r < 0.35:  # a real method, with the right or a wrong signature
            member = rng.choice(METHODS)
            right = {"CheckAddress": "(s)", "CheckHost": "(su)", "Explain": "(s)", "Watch": "(s)", "Unwatch": "(o)"}.get(member, "()")
            signature = right if rng.random() < 0.5 else "(" + "".join(self.signature() for _ in range(rng.randint(0, 3))) + ")"
            body = GLib.Variant.new_tuple(*[self.value(part, fds) for part in split(signature[1:-1])])
            return path, INTERFACE, member, body, fds
        if r < 0.55:  # Properties: Get, GetAll, and Set on every property
            prop = rng.choice(SERVICE_PROPERTIES + WATCH_PROPERTIES + ["Nope", ""])
            interface = rng.choice([INTERFACE, WATCH, "", "org.nope"])
            member = rng.choice(["Get", "GetAll", "Set", "Set", "Set"])
            if member == "Set":
                body = GLib.Variant.new_tuple(GLib.Variant("s", interface), GLib.Variant("s", prop),
                                              GLib.Variant("v", self.value(self.signature(1), fds)))
            elif member == "Get":
                body = GLib.Variant("(ss)", (interface, prop))
            else:
                body = GLib.Variant("(s)", (interface,))
            return path, PROPERTIES, member, body, fds
        if r < 0.65:  # nested variants, as deep as the spec allows and past it
            return path, INTERFACE, rng.choice(METHODS), self.deeply_nested(), fds
        if r < 0.75:  # file descriptors where none belong
            signature = "(" + "h" * rng.randint(1, 4) + ")"
            body = GLib.Variant.new_tuple(*[self.value("h", fds) for _ in signature[1:-1]])
            return path, rng.choice([INTERFACE, PROPERTIES]), rng.choice(METHODS + ["Get"]), body, fds
        # unknown interfaces and members, random bodies
        member = rng.choice(METHODS + ["Nope", "Introspect", "Ping", "GetMachineId", "GetAll", "A" * 255])
        signature = "(" + "".join(self.signature() for _ in range(rng.randint(0, 3))) + ")"
        body = GLib.Variant.new_tuple(*[self.value(part, fds) for part in split(signature[1:-1])])
        return path, rng.choice(INTERFACES), member, body, fds


def split(signature):
    """Complete types of a signature."""
    parts, index = [], 0
    while index < len(signature):
        end = complete(signature, index)
        parts.append(signature[index:end])
        index = end
    return parts


def complete(signature, index):
    c = signature[index]
    if c == "a":
        return complete(signature, index + 1)
    if c in "({":
        close = ")" if c == "(" else "}"
        index += 1
        while signature[index] != close:
            index = complete(signature, index)
        return index + 1
    return index + 1


def open_fds(kinds):
    fd_list = Gio.UnixFDList()
    opened = []
    for kind in kinds:
        if kind == "pipe":
            r, w = os.pipe()
            opened += [r, w]
            fd_list.append(r)
        elif kind == "devnull":
            fd = os.open("/dev/null", os.O_RDONLY)
            opened.append(fd)
            fd_list.append(fd)
        else:
            import socket
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            opened.append(s.detach())
            fd_list.append(opened[-1])
    return fd_list, opened


def call(connection, path, interface, member, body=None, fd_list=None, timeout=2000):
    message = Gio.DBusMessage.new_method_call(NAME, path, interface or None, member)
    if body is not None:
        message.set_body(body)
    if fd_list is not None:
        message.set_unix_fd_list(fd_list)
    reply, _ = connection.send_message_with_reply_sync(message, Gio.DBusSendMessageFlags.NONE, timeout, None)
    return reply


def main():
    address, pid, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    fuzzer = Fuzzer(rng)
    probe = connect(address)
    call(probe, PATH, INTERFACE, "GetStatus")
    time.sleep(0.2)
    fds_before = fd_count(pid)
    connections = [connect(address) for _ in range(4)]
    outcomes = {"reply": 0, "error": 0, "timeout": 0, "refused locally": 0}
    errors = {}
    dropped = 0
    started = time.monotonic()
    for index in range(count):
        if index % 997 == 996:  # a caller leaves with whatever it held
            victim = rng.randrange(len(connections))
            if not connections[victim].is_closed():
                connections[victim].close_sync(None)
            connections[victim] = connect(address)
        chosen = rng.randrange(len(connections))
        if connections[chosen].is_closed():  # the bus itself hung up on a message it would not pass on
            dropped += 1
            connections[chosen] = connect(address)
        connection = connections[chosen]
        try:
            path, interface, member, body, kinds = fuzzer.message()
        except (TypeError, ValueError, OverflowError):
            outcomes["refused locally"] += 1
            continue
        fd_list, opened = open_fds(kinds) if kinds else (None, [])
        try:
            reply = call(connection, path, interface, member, body, fd_list, timeout=rng.choice([50, 2000]))
            if reply.get_message_type() == Gio.DBusMessageType.ERROR:
                outcomes["error"] += 1
                name = reply.get_error_name()
                errors[name] = errors.get(name, 0) + 1
            else:
                outcomes["reply"] += 1
                if member == "Watch" and reply.get_body() is not None:
                    fuzzer.watches.append(reply.get_body().unpack()[0])
        except TypeError:  # a path or name GLib itself will not put in a message
            outcomes["refused locally"] += 1
        except GLib.Error as error:
            if "Timeout" in str(error) or error.code == Gio.IOErrorEnum.TIMED_OUT:
                outcomes["timeout"] += 1
            else:
                outcomes["refused locally"] += 1
        finally:
            for fd in opened:
                os.close(fd)
    elapsed = time.monotonic() - started
    for connection in connections:
        if not connection.is_closed():
            connection.close_sync(None)

    failures = []
    try:
        os.kill(pid, 0)
    except PermissionError:
        pass  # alive, and another user's
    except ProcessLookupError:
        failures.append("reachd is gone")
    if not failures:
        # Plain calls answer as they should: the loopback is reachable through lo, a bad target
        # is InvalidTarget, and no watch of a departed caller is left.
        answer = call(probe, PATH, INTERFACE, "CheckAddress", GLib.Variant("(s)", ("127.0.0.1",)))
        if answer.get_message_type() != Gio.DBusMessageType.METHOD_RETURN or answer.get_body().unpack()[1] != "lo":
            failures.append("CheckAddress(127.0.0.1) answered %s" % answer.print_(0))
        bad = call(probe, PATH, INTERFACE, "CheckAddress", GLib.Variant("(s)", ("not an address",)))
        if bad.get_error_name() != "org.reachd.Reachability1.Error.InvalidTarget":
            failures.append("CheckAddress(not an address) answered %s" % bad.print_(0))
        for _ in range(50):
            metrics = call(probe, PATH, INTERFACE, "GetMetrics").get_body().unpack()[0]
            watches = [line for line in metrics.splitlines() if line.startswith("reachd_watches ")]
            if watches == ["reachd_watches 0"]:
                break
            time.sleep(0.1)
        if watches != ["reachd_watches 0"]:
            failures.append("watches left after every fuzzing caller left: %s" % watches)
        fds_after = fd_count(pid)
        for _ in range(50):
            if fds_after is None or fds_after <= fds_before:
                break
            time.sleep(0.1)
            fds_after = fd_count(pid)
        if fds_after != fds_before:
            failures.append("reachd's file descriptors: %d before, %d after" % (fds_before, fds_after))
    top = ", ".join("%s %d" % (name.rsplit(".", 1)[-1], n) for name, n in sorted(errors.items(), key=lambda e: -e[1])[:6])
    print("dbus fuzz: seed %d, %d messages in %.1f s (%.0f/s): %d replies, %d errors (%s), %d timeouts, %d not sendable, %d connections the bus dropped; "
          "fds %s before, %s after; %s" % (
              seed, count, elapsed, count / elapsed, outcomes["reply"], outcomes["error"], top, outcomes["timeout"],
              outcomes["refused locally"], dropped, fds_before, fd_count(pid) if not failures or "gone" not in failures[0] else -1,
              "FAIL: " + "; ".join(failures) if failures else "reachd alive and correct"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
