#!/usr/bin/env python3
"""Hostile upstreams for bench/hostile-bench (Python standard library only).

One process, one thread, one selector:
  --silent N on ADDR: N listening sockets (N distinct ports) that accept and read, and never send a byte;
  --drip M on ADDR:   M listening sockets that accept and then send one byte every --interval seconds:
                      a TLS handshake record header announcing 16 KiB, then its body a byte at a time, so
                      a reader with a per-read time limit never times out and the handshake never ends.

Prints one JSON line on stdout once every socket listens: {"silent": [ports], "drip": [ports]}, then serves
until SIGTERM or SIGINT, or until its parent dies (the driver sets PR_SET_PDEATHSIG) or --lifetime runs out.
"""

import argparse
import json
import os
import selectors
import signal
import socket
import sys
import time

# A TLS 1.2 handshake record of 16,384 bytes, starting a ServerHello of 16,380: never completed at this pace.
DRIP_PREFIX = bytes([0x16, 0x03, 0x03, 0x40, 0x00, 0x02, 0x00, 0x3F, 0xFC, 0x03, 0x03])


def listen_many(address, count, backlog):
    socks = []
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((address, 0))
        s.listen(backlog)
        s.setblocking(False)
        socks.append(s)
    return socks


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--silent", type=int, default=400)
    parser.add_argument("--silent-address", default="127.0.0.2")
    parser.add_argument("--drip", type=int, default=16)
    parser.add_argument("--drip-address", default="127.0.0.3")
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--lifetime", type=float, default=900.0, help="exit after this many seconds whatever happens")
    args = parser.parse_args()

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))

    silent = listen_many(args.silent_address, args.silent, 64)
    drip = listen_many(args.drip_address, args.drip, 64)
    selector = selectors.DefaultSelector()
    for s in silent:
        selector.register(s, selectors.EVENT_READ, ("listen", "silent"))
    for s in drip:
        selector.register(s, selectors.EVENT_READ, ("listen", "drip"))
    print(json.dumps({"silent": [s.getsockname()[1] for s in silent], "drip": [s.getsockname()[1] for s in drip]}),
          flush=True)

    dripping = {}  # socket -> bytes sent so far
    deadline = time.monotonic() + args.lifetime
    next_drip = time.monotonic() + args.interval
    while not stop and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=max(0.0, min(0.5, next_drip - time.monotonic()))):
            kind, role = key.data
            if kind == "listen":
                try:
                    conn, _ = key.fileobj.accept()
                except OSError:
                    continue
                conn.setblocking(False)
                selector.register(conn, selectors.EVENT_READ, ("conn", role))
                if role == "drip":
                    dripping[conn] = 0
            else:
                try:
                    data = key.fileobj.recv(65536)  # the ClientHello, read and dropped
                except OSError:
                    data = b""
                if not data:
                    selector.unregister(key.fileobj)
                    dripping.pop(key.fileobj, None)
                    key.fileobj.close()
        if time.monotonic() >= next_drip:
            next_drip += args.interval
            for conn, sent in list(dripping.items()):
                byte = DRIP_PREFIX[sent:sent + 1] or b"\x00"
                try:
                    conn.send(byte)
                    dripping[conn] = sent + 1
                except OSError:
                    selector.unregister(conn)
                    del dripping[conn]
                    conn.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
