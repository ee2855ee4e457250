#!/usr/bin/python3
"""Mutated configuration files, from outside (issue 24): through `reachd --check-config` and
through a running reachd's reload (SIGHUP).

Usage: config_fuzz.py REACHD ADDRESS PID CONFIG_DIR COUNT RELOADS SEED

Mutations start from the seeds of the in-process `configuration` target (Fuzz/Corpus/configuration)
and packaging/reachd.conf: bytes flipped, inserted and cut, lines duplicated, swapped and
dropped, keys of every section with values past their ranges, NULs, bad UTF-8, very long lines,
and files that are not regular files (a FIFO, a link to /dev/zero, a directory, a dangling
link, which is a file that is not there). Every `--check-config` must exit 0 (valid) or 2 (invalid, every error naming the file and
a line, or the path when it is not a regular file) within 5 s, with no trace of a crash. Every
RELOADS/COUNT-th mutation is also written where the running reachd reads its configuration,
and reachd is sent SIGHUP: it must stay alive and answer GetStatus. At the end the first seed is
put back and reloaded: reachd must answer plain calls correctly, with as many file descriptors
as before. Prints one line of figures; exits 1 on a failure. Repeatable by SEED.
"""
import glob
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import time

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

NAME, PATH, INTERFACE = "org.reachd.Reachability1", "/org/reachd/Reachability1", "org.reachd.Reachability1"
KEYS = {
    "Checks": ["DefaultTimeout", "MaxConcurrentLookups", "NegativeCacheTime", "LookupsPerUserPerSecond", "LookupBurstPerUser"],
    "Limits": ["MaxWatchesPerClient", "MaxWatchesPerUser", "MaxWatches"],
    "Priorities": ["VPN", "Wired", "WiFi", "Cellular", "Bridge", "Virtual", "Other", "Loopback"],
    "WaitOnline": ["Timeout", "Target", "Kind"],
    "Compatibility": ["NetworkManager"],
    "Metrics": ["TextfileDirectory", "TextfileInterval"],
    "Stall": ["Detect", "MinSegments", "RetransmitPercent", "DNSTimeouts", "Interval"],
    "Connectivity": ["URL", "Interval", "Timeout", "ExpectedStatus", "ExpectedBody"],
    "Interface": ["Name", "Kind", "Metered", "Probe", "Ignore", "Priority"],
    "Nope": ["Nope"],
}
VALUES = ["", "0", "-1", "1", "auto", "yes", "no", "2147483648", "99999999999999999999", "5s", "0s", "24h", "25h", "1ms",
          "300001ms", "http://192.0.2.1/generate_204", "https://x/", "javascript:alert(1)", "/tmp", "/nonexistent", "eth*",
          "[a-", "*", "wired", "wifi", "a" * 5000, "\x01\x1b[31m", "\u202e", "1.5", "0x10", "1e3"]


def mutate(rng, seed):
    data = bytearray(seed)
    for _ in range(rng.randint(1, 6)):
        r = rng.random()
        lines = data.split(b"\n")
        if r < 0.2 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif r < 0.3:
            data[rng.randint(0, len(data)):rng.randint(0, len(data))] = bytes([rng.choice([0, 0xFF, 0xC3, 0x80, 10, 13, 61, 91, 93, 35, 92])])
        elif r < 0.4 and data:
            start = rng.randrange(len(data))
            del data[start:start + rng.randint(1, 40)]
        elif r < 0.5 and lines:
            line = rng.choice(lines)
            lines.insert(rng.randint(0, len(lines)), line)
            data = bytearray(b"\n".join(lines))
        elif r < 0.6 and len(lines) > 1:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            data = bytearray(b"\n".join(lines))
        elif r < 0.9:
            section = rng.choice(list(KEYS))
            line = "%s=%s" % (rng.choice(KEYS[section]), rng.choice(VALUES))
            text = ("[%s]\n" % section if rng.random() < 0.7 else "") + line + "\n"
            data += text.encode("utf-8", "surrogatepass")
        else:
            data += b"X" * rng.choice([1000, 70000, 1 << 20]) + b"\n"
    return bytes(data)


def special(directory, rng):
    """Puts something that is not a regular file where reachd.conf belongs; returns its kind."""
    path = os.path.join(directory, "reachd.conf")
    kind = rng.choice(["fifo", "devzero", "directory", "dangling", "dropin-fifo"])
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "devzero":
        os.symlink("/dev/zero", path)
    elif kind == "directory":
        os.mkdir(path)
    elif kind == "dangling":
        os.symlink(os.path.join(directory, "nothing-here"), path)
    else:
        os.mkdir(path + ".d")
        os.mkfifo(path + ".d/50-fifo.conf")
    return kind


def clear(directory):
    for entry in os.listdir(directory):
        full = os.path.join(directory, entry)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full)
        else:
            os.unlink(full)


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def main():
    reachd, address, pid, live, count, reloads, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], \
        int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
    rng = random.Random(seed)
    seeds = [open("packaging/reachd.conf", "rb").read()]
    seeds += [open(p, "rb").read() for p in sorted(glob.glob("Fuzz/Corpus/configuration/*")) if os.path.isfile(p)]
    flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
    bus = Gio.DBusConnection.new_for_address_sync(address, flags, None, None)

    def call(member, signature=None, args=None):
        return bus.call_sync(NAME, PATH, INTERFACE, member, GLib.Variant(signature, args) if signature else None,
                             None, 0, 5000, None).unpack()

    call("GetStatus")
    fds_before = fd_count(pid)
    scratch = live + "-check"
    os.makedirs(scratch, exist_ok=True)
    outcomes = {0: 0, 2: 0}
    specials = 0
    reloaded = 0
    failures = []
    every = max(1, count // max(1, reloads))
    started = time.monotonic()
    for index in range(count):
        clear(scratch)
        kind = None
        if rng.random() < 0.03:
            kind = special(scratch, rng)
            specials += 1
            data = None
        else:
            data = mutate(rng, rng.choice(seeds))
            with open(os.path.join(scratch, "reachd.conf"), "wb") as f:
                f.write(data)
        try:
            run = subprocess.run([reachd, "--check-config", "--config-dir", scratch], capture_output=True, timeout=5)
        except subprocess.TimeoutExpired:
            failures.append("mutation %d (%s): --check-config still running after 5 s" % (index, kind or "file"))
            break
        outcomes[run.returncode] = outcomes.get(run.returncode, 0) + 1
        err = run.stderr.decode("utf-8", "replace")
        if run.returncode not in (0, 2):
            failures.append("mutation %d (%s): exit %d: %s" % (index, kind or "file", run.returncode, err[-300:]))
        elif run.returncode == 2 and scratch not in err:
            failures.append("mutation %d (%s): an error that names no file: %s" % (index, kind or "file", err[:300]))
        elif kind and kind != "dangling" and run.returncode != 2:  # a dangling link is a file that is not there
            failures.append("mutation %d: a %s taken as a configuration" % (index, kind))
        if any(0 < ord(c) < 32 and c not in "\n\t" for c in err):
            failures.append("mutation %d: a control character in an error message: %r" % (index, err[:200]))
        if index % every == every - 1 and data is not None:
            clear(live)
            with open(os.path.join(live, "reachd.conf"), "wb") as f:
                f.write(data)
            os.kill(pid, signal.SIGHUP)
            reloaded += 1
            try:
                call("GetStatus")
            except GLib.Error as error:
                failures.append("after reload %d: GetStatus failed: %s" % (reloaded, error.message))
        if failures and len(failures) > 5:
            break
    elapsed = time.monotonic() - started

    clear(live)
    with open(os.path.join(live, "reachd.conf"), "wb") as f:
        f.write(seeds[0])
    os.kill(pid, signal.SIGHUP)
    time.sleep(0.3)
    try:
        os.kill(pid, 0)
        answer = call("CheckAddress", "(s)", ("127.0.0.1",))
        if answer[1] != "lo":
            failures.append("CheckAddress(127.0.0.1) after the runs: %s" % (answer,))
        fds_after = fd_count(pid)
        for _ in range(50):
            if fds_after <= fds_before:
                break
            time.sleep(0.1)
            fds_after = fd_count(pid)
        if fds_after != fds_before:
            failures.append("reachd's file descriptors: %d before, %d after" % (fds_before, fds_after))
    except ProcessLookupError:
        failures.append("reachd is gone")
        fds_after = -1
    except GLib.Error as error:
        failures.append("CheckAddress after the runs: %s" % error.message)
        fds_after = fd_count(pid)
    shutil.rmtree(scratch, ignore_errors=True)
    print("config fuzz: seed %d, %d mutations in %.1f s (%.0f/s): %d valid, %d refused, %d not regular files; "
          "%d reloads of a running reachd; fds %d before, %d after; %s" % (
              seed, index + 1, elapsed, (index + 1) / elapsed, outcomes.get(0, 0), outcomes.get(2, 0), specials, reloaded,
              fds_before, fds_after, "FAIL: " + "; ".join(failures[:5]) if failures else "reachd alive and correct"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
