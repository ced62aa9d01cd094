"""The one RESP client of bench/compare for the bulk traffic redis-py would slow down: one
encoder (`encode`, `resp`, `encode_batches`) and one raw connection (`RawConn`): pipelined
chunks whose replies are known in advance (`exchange`, `drive`, `chunked`) and windows of
multi-item commands answered with arrays of 0/1 (`send_batches`, `send_all`). Many connections
at once go through `redis-cli --pipe` (`drive_pipes`)."""

import argparse
import contextlib
import ctypes
import datetime
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .harness import *  # noqa: F401,F403
from .harness import BenchError, wait_clients


def bulk(arg):
    """One RESP2 bulk string, from bytes, str or int: the one encoder every command goes through."""
    a = arg if isinstance(arg, bytes) else str(arg).encode()
    return b"$%d\r\n%s\r\n" % (len(a), a)


def resp(*args):
    """One command in RESP2, arguments as bytes or str or int."""
    return b"*%d\r\n" % len(args) + b"".join(bulk(a) for a in args)


def encode_batches(items, batch):
    """RESP encoding of the items, one `(count, bytes)` per batch, made once and sent to both
    modules (the command name and key are put in front at send time, by `RawConn.send_batches`)."""
    out = []
    for i in range(0, len(items), batch):
        chunk = items[i:i + batch]
        out.append((len(chunk), b"".join(bulk(x) for x in chunk)))
    return out


class RawConn:
    """A raw RESP2 connection for the bulk traffic: redis-py encodes and parses ~10 µs per item in
    Python, which would make the client the bottleneck of a run (the server-side numbers do not
    depend on the client, but the wall time does). Two ways to use it:

    - `exchange`: one chunk of pipelined, pre-encoded commands whose replies are known in
      advance; reads exactly the bytes their replies must have and checks them (bytes compared
      as they are, or a compiled pattern that must match all of them).
    - `send_batches`: multi-item commands (MADD / MEXISTS / CF.INSERT … of pre-encoded batches),
      a window at a time; each reply must be an array of `n` integers 0/1.

    An error reply or a wrong value fails the run.
    """

    WINDOW = 8

    def __init__(self, port, timeout=900):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.settimeout(timeout)  # callgrind servers are slow, but never this slow
        self.reader = self.sock.makefile("rb")

    def exchange(self, payload, reply_len, expect):
        self.sock.sendall(payload)
        try:
            buf = self.reader.read(reply_len)
        except socket.timeout:
            raise BenchError("reply incomplete after the timeout") from None
        if len(buf) < reply_len:
            raise BenchError(f"the server closed the connection: {bytes(buf)[:300]!r}")
        ok = buf == expect if isinstance(expect, bytes) else expect.fullmatch(buf) is not None
        if not ok:
            raise BenchError(f"unexpected reply: {bytes(buf)[:300]!r}")

    def send_batches(self, cmd, key, batches, args=()):
        """`cmd key *args` and the items of each batch (args: e.g. ITEMS for CF.INSERT)."""
        words = [w.encode() for w in (cmd, key, *args)]
        head = b"".join(bulk(w) for w in words)
        cmd = words[0]
        for w in range(0, len(batches), self.WINDOW):
            group = batches[w:w + self.WINDOW]
            self.sock.sendall(b"".join(b"*%d\r\n" % (n + len(words)) + head + body for n, body in group))
            for n, _ in group:
                line = self.reader.readline()
                if line != b"*%d\r\n" % n:
                    raise BenchError(f"{cmd.decode()}: unexpected reply {line[:200]!r}")
                data = self.reader.read(4 * n)
                if data[0::4] != b":" * n or data.count(b"\r\n") != n:
                    raise BenchError(f"{cmd.decode()}: reply is not {n} integers: {data[:200]!r}")

    def close(self):
        with contextlib.suppress(OSError):
            self.reader.close()
            self.sock.close()


def chunked(commands, reply, per_chunk):
    """Groups equal-shaped commands into chunks of `per_chunk` for RawConn.exchange: `reply` is each
    command's reply, as bytes (exact) or as (length, pattern bytes)."""
    out = []
    for i in range(0, len(commands), per_chunk):
        group = commands[i:i + per_chunk]
        if isinstance(reply, bytes):
            out.append((b"".join(group), len(reply) * len(group), reply * len(group)))
        else:
            length, pattern = reply
            out.append((b"".join(group), length * len(group), re.compile(b"(?:%s){%d}" % (pattern, len(group)), re.S)))
    return out


def drive(server, chunks):
    """Sends the chunks over one connection, one chunk at a time; returns the wall time. Waits
    until the server has freed the connection, so a used_memory read that follows does not see
    its buffers."""
    conn = RawConn(server.port, timeout=120)
    try:
        t0 = time.monotonic()
        for payload, n, expect in chunks:
            conn.exchange(payload, n, expect)
        elapsed = time.monotonic() - t0
    except BenchError:
        raise
    except Exception as e:
        raise BenchError(repr(e)) from e
    finally:
        conn.close()
    wait_clients(server.client, 1)
    return elapsed


def send_all(server, cmd, key, batches, args=()):
    """Sends the batches on a connection of their own, closed before returning; waits until the
    server has freed it, so its buffers are out of any used_memory read that follows."""
    conn = RawConn(server.port)
    try:
        conn.send_batches(cmd, key, batches, args)
    finally:
        conn.close()
    wait_clients(server.client, 1)


def timed_phase(srv, part, cmd, key, enc, which, n, batched):
    """One timed phase of a part with single-item and batched commands (counting, cuckoo): `cmd`
    on `key` over the items `which` of `enc` (its `batches` for a command in `batched`, one
    call per item otherwise), timed by INFO commandstats reset before it. Server-side ns per
    item; every call must have been counted."""
    c = srv.client
    c.config_resetstat()
    if cmd in batched:
        send_all(srv, cmd, key, enc["batches"][which], ("ITEMS",) if cmd == "CF.INSERT" else ())
        want = len(enc["batches"][which])
    else:
        drive(srv, enc["singles"](cmd, key, which))
        want = n
    usec, calls = commandstat(c, cmd)
    if calls != want:
        raise BenchError(f"{part}: {srv.name}: {calls} calls of {cmd} counted, {want} sent")
    return usec * 1000 / n


def drive_pipes(server, files):
    """Sends each file of RESP commands through its own `redis-cli --pipe`, all at once (a C
    client per connection: the creation phases were bound by the Python client's threads, so the
    server's CPU per request moved with how requests happened to arrive). Each redis-cli writes
    its commands as fast as the socket takes them and reads every reply; an error reply or a
    missing reply fails the run. Returns the wall time."""
    t0 = time.monotonic()
    procs = []
    for path, expected in files:
        with open(path, "rb") as stdin:
            procs.append((subprocess.Popen(["redis-cli", "-h", "127.0.0.1", "-p", str(server.port), "--pipe"],
                                           stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                           text=True), expected))
    outputs = [(p.communicate(timeout=600)[0], expected) for p, expected in procs]
    elapsed = time.monotonic() - t0
    for out, expected in outputs:
        m = re.search(r"errors: (\d+), replies: (\d+)", out)
        if not m or int(m.group(1)) != 0 or int(m.group(2)) != expected:
            raise BenchError(f"{server.name}: redis-cli --pipe: {out.strip()[-200:]}")
    wait_clients(server.client, 1)
    return elapsed


def pipe_files(directory, name, commands, clients):
    """Splits `commands` (RESP bytes each) into `clients` files, command i into file i % clients;
    returns (path, number of commands) per file."""
    files = []
    for i in range(clients):
        path = Path(directory) / f"{name}-{i}.resp"
        share = commands[i::clients]
        path.write_bytes(b"".join(share))
        files.append((path, len(share)))
    return files

