#!/usr/bin/env python3
"""bench/latency-bench/relay.py: a TCP relay on loopback that adds a fixed one-way delay.

Python standard library only (asyncio). It listens on 127.0.0.1 and forwards every connection it
accepts to one target (nginx), delaying every chunk of bytes by DELAY ms in each direction, in
order, half-closes included (a side's end becomes a shutdown of the other side's writing, delayed
like the bytes). So a request and its answer cost 2 x DELAY: a round trip.

The TCP handshake cannot be delayed in userspace (the kernel completes it before accept()), so the
relay emulates what it costs: it connects to the target DELAY ms after it accepted (the SYN's trip),
and with --connect-rtt (the default) it delivers the client's first bytes no earlier than
3 x DELAY after the accept: a client whose connect() took a round trip would have sent them then,
and they would arrive DELAY later. The client's connect() itself returns at once; only what it
sends is held. --no-connect-rtt drops that: the first bytes arrive after DELAY like any others, so
a connection costs no round trip of its own.

Each chunk read at time t is written at max(t + DELAY, floor) (floor: the first-bytes bound above
for the client's side); times never decrease, so order is kept. There is no bandwidth limit and no
loss: it models distance, not a link.

  relay.py --target 127.0.0.1:PORT [--delay-ms 25] [--no-connect-rtt] [--events FILE]

Prints one JSON line, {"port": N}, once it listens. With --events, appends one JSON line per
connection once it closes: its times (time.monotonic(), the clock the bench reads too) of accept,
target connected, first bytes read each way, close, the bytes each way, and the first 8 reads each
way (seconds after the accept, bytes): when a client's writes reached the relay.
"""

import argparse
import asyncio
import json
import socket
import sys


CHUNKS_KEPT = 8


class Connection:
    count = 0

    def __init__(self, loop):
        Connection.count += 1
        self.id = Connection.count
        self.times = {"accepted": loop.time()}
        self.bytes = {"up": 0, "down": 0}
        self.chunks = {"first_up": [], "first_down": []}  # (seconds after accept, bytes) of the first reads


async def pump(reader, queue, delay, floor, note, loop):
    """Reads chunks from `reader` into `queue` as (deliver_at, bytes); b"" at the end."""
    try:
        while True:
            data = await reader.read(65536)
            now = loop.time()
            if data:
                note(now, len(data))
            await queue.put((max(now + delay, floor), data))
            if not data:
                return
    except (ConnectionError, OSError):
        await queue.put((0, None))  # reset: the other side is aborted at once


async def deliver(queue, writer_future, counter, loop):
    """Writes what `pump` read, each chunk at its time; ends with a shutdown of writing. Returns
    False when the connection failed (the caller aborts both sides)."""
    writer = None
    while True:
        at, data = await queue.get()
        if data is None:
            return False
        wait = at - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)
        if writer is None:
            writer = await writer_future
            if writer is None:
                return False
        try:
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return True
            writer.write(data)
            counter(len(data))
            await writer.drain()
        except (ConnectionError, OSError):
            return False


def nodelay(writer):
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", required=True, help="HOST:PORT to forward to")
    parser.add_argument("--listen", default="127.0.0.1", help="address to listen on (port chosen)")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay-ms", type=float, default=25.0, help="one-way delay (25)")
    parser.add_argument("--no-connect-rtt", dest="connect_rtt", action="store_false",
                        help="no round trip for the connection itself (first bytes after one delay)")
    parser.add_argument("--events", help="append a JSON line per closed connection to this file")
    args = parser.parse_args()
    host, _, port = args.target.rpartition(":")
    delay = args.delay_ms / 1000.0
    loop = asyncio.get_running_loop()
    events = open(args.events, "a", buffering=1) if args.events else None

    async def handle(client_reader, client_writer):
        conn = Connection(loop)
        t0 = conn.times["accepted"]
        nodelay(client_writer)
        target = loop.create_future()

        async def connect():
            await asyncio.sleep(delay)  # the SYN's way to the server
            try:
                reader, writer = await asyncio.open_connection(host, int(port))
            except OSError as error:
                conn.times["connect_error"] = str(error)
                target.set_result(None)
                return None
            nodelay(writer)
            conn.times["connected"] = loop.time()
            target.set_result(writer)
            return reader

        def noted(key):
            def note(t, n):
                conn.times.setdefault(key, t)
                if len(conn.chunks[key]) < CHUNKS_KEPT:
                    conn.chunks[key].append((round(t - t0, 4), n))
            return note

        def counted(key):
            def add(n):
                conn.bytes[key] += n
            return add

        up, down = asyncio.Queue(), asyncio.Queue()
        floor = t0 + (3 if args.connect_rtt else 1) * delay
        client_ready = loop.create_future()
        client_ready.set_result(client_writer)
        connecting = asyncio.ensure_future(connect())
        tasks = [asyncio.ensure_future(pump(client_reader, up, delay, floor, noted("first_up"), loop)),
                 asyncio.ensure_future(deliver(up, target, counted("up"), loop))]
        target_reader = await connecting
        if target_reader is not None:
            tasks += [asyncio.ensure_future(pump(target_reader, down, delay, 0, noted("first_down"), loop)),
                      asyncio.ensure_future(deliver(down, client_ready, counted("down"), loop))]
            delivering = [tasks[1], tasks[3]]
        else:
            delivering = [tasks[1]]
        # Both directions delivered to their end, or one failed: then both sides are closed.
        pending = set(delivering)
        ok = target_reader is not None
        while pending and ok:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            ok = all(t.result() for t in done)
        for task in tasks:
            task.cancel()
        writers = [client_writer] + ([target.result()] if target.done() and target.result() else [])
        for writer in writers:
            try:
                if ok:
                    writer.close()
                else:
                    writer.transport.abort()
            except Exception:  # noqa: BLE001
                pass
        conn.times["closed"] = loop.time()
        if events:
            events.write(json.dumps({"id": conn.id, "ok": ok, **conn.times, "bytes_up": conn.bytes["up"],
                                     "bytes_down": conn.bytes["down"], "reads_up": conn.chunks["first_up"],
                                     "reads_down": conn.chunks["first_down"]}) + "\n")

    server = await asyncio.start_server(handle, args.listen, args.port, backlog=1024)
    port_chosen = server.sockets[0].getsockname()[1]
    print(json.dumps({"port": port_chosen}), flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(130)
