"""Hostile HTTP/2 peers for HTTP2HostileProcessTests: a device that goes through the proxy (CONNECT,
then TLS with ALPN h2) and an origin the proxy connects to (TLS, ALPN h2), each well behaved or
misbehaving as its mode says.

Frames are written by hand (not through h2's state machine, which refuses to misbehave), HPACK with
the hpack package h2 uses. Sockets are non-blocking and one thread drives each connection, so a
peer that "never reads" simply does not read, and a write the proxy no longer takes is seen as no
progress rather than a hang.

    hostile_h2.py server MODE CERT KEY          prints "PORT n", then one "CONNECTION {json}" line
                                                 per connection as it ends
    hostile_h2.py client MODE PROXY HOST PORT CA [ARG]
                                                 prints one JSON line: what the proxy did

Every wait has a deadline: a peer never outlives its test.
"""

import json
import select
import socket
import ssl
import struct
import sys
import threading
import time

import hpack

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM = ACK = 0x1
END_HEADERS, PADDED, PRIORITY_FLAG = 0x4, 0x8, 0x20
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTING = {"header_table_size": 1, "enable_push": 2, "max_concurrent_streams": 3, "initial_window_size": 4,
           "max_frame_size": 5, "max_header_list_size": 6}
CODES = {0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR", 5: "STREAM_CLOSED",
         6: "FRAME_SIZE_ERROR", 7: "REFUSED_STREAM", 8: "CANCEL", 9: "COMPRESSION_ERROR", 11: "ENHANCE_YOUR_CALM"}


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def settings_frame(**values):
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", SETTING[k], v) for k, v in values.items()))


def code_name(code):
    return CODES.get(code, hex(code))


def bomb_block(prefix, references):
    """A header block that is small on the wire and huge decoded: `prefix` (already encoded), one
    ~4 KB field inserted in the dynamic table, then `references` one-byte references to it (index 62,
    the newest dynamic entry)."""
    value = b"b" * 4000
    literal = b"\x40" + hpack_string(b"x-bomb") + hpack_string(value)
    return prefix + literal + b"\xbe" * references


def hpack_string(octets):
    """A raw (not Huffman) HPACK string literal."""
    return hpack_integer(len(octets), 7, 0) + octets


def hpack_integer(value, prefix_bits, first):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class Peer:
    """One HTTP/2 connection over a non-blocking TLS socket: frames queued out, frames parsed in."""

    def __init__(self, tls, server):
        self.tls = tls
        tls.setblocking(False)
        self.server = server
        self.out = bytearray()
        self.buffer = bytearray()
        self.preface_seen = not server
        self.ended = False
        self.error = None
        self.written = 0
        self.decoder = hpack.Decoder()
        self.decoder.max_allowed_table_size = 1 << 16
        self.decoder.max_header_list_size = 1 << 30
        self.blocks = {}
        self.goaway = None
        self.resets = {}
        self.headers = {}
        self.finished = set()
        self.body = {}
        self.acks = 0
        self.settings = {}
        self.opened = 0
        self.auto_ack = True
        self.auto_window = True
        # Send windows, for a peer that sends bodies as flow control allows.
        self.connection_window = 65535
        self.windows = {}

    def send(self, data):
        self.out += data

    def pump(self, timeout, read=True):
        """Writes what the socket takes and, when `read`, parses what came: whether anything moved."""
        if self.ended:
            return False
        moved = False
        if read and self.tls.pending():
            return self.read()
        readable, writable, _ = select.select([self.tls] if read else [], [self.tls] if self.out else [], [], timeout)
        if writable:
            try:
                count = self.tls.send(self.out[:1 << 16])
                del self.out[:count]
                self.written += count
                moved = count > 0
            except (ssl.SSLWantWriteError, ssl.SSLWantReadError):
                pass
            except OSError as error:
                self.ended = True
                self.error = repr(error)
                return True
        if readable:
            moved = self.read() or moved
        return moved

    def read(self):
        moved = False
        while not self.ended:
            try:
                data = self.tls.recv(1 << 16)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                return moved
            except OSError as error:
                self.ended = True
                self.error = repr(error)
                return True
            moved = True
            if not data:
                self.ended = True
                return True
            self.buffer += data
            self.parse()
        return moved

    def run_until(self, condition, timeout, read=True):
        deadline = time.monotonic() + timeout
        while not condition() and not self.ended and time.monotonic() < deadline:
            self.pump(0.2, read)
        return condition()

    def parse(self):
        if not self.preface_seen:
            if len(self.buffer) < len(PREFACE):
                return
            del self.buffer[:len(PREFACE)]
            self.preface_seen = True
        while len(self.buffer) >= 9:
            length = int.from_bytes(self.buffer[:3], "big")
            if len(self.buffer) < 9 + length:
                return
            kind, flags = self.buffer[3], self.buffer[4]
            stream = int.from_bytes(self.buffer[5:9], "big") & 0x7FFFFFFF
            payload = bytes(self.buffer[9:9 + length])
            del self.buffer[:9 + length]
            self.on_frame(kind, flags, stream, payload)

    def on_frame(self, kind, flags, stream, payload):
        if kind == SETTINGS and not flags & ACK:
            for offset in range(0, len(payload), 6):
                key, value = struct.unpack(">HI", payload[offset:offset + 6])
                if key == SETTING["initial_window_size"]:
                    delta = value - self.settings.get(key, 65535)
                    for id in self.windows:
                        self.windows[id] += delta
                self.settings[key] = value
            if self.auto_ack:
                self.send(frame(SETTINGS, ACK, 0))
        elif kind in (SETTINGS, PING) and flags & ACK:
            self.acks += 1
        elif kind == PING and self.auto_ack:
            self.send(frame(PING, ACK, 0, payload))
        elif kind == HEADERS:
            if flags & PADDED:
                payload = payload[1:len(payload) - payload[0]]
            if flags & PRIORITY_FLAG:
                payload = payload[5:]
            self.blocks[stream] = (bytearray(payload), flags & END_STREAM)
            if flags & END_HEADERS:
                self.header_block_done(stream)
        elif kind == CONTINUATION and stream in self.blocks:
            self.blocks[stream][0].extend(payload)
            if flags & END_HEADERS:
                self.header_block_done(stream)
        elif kind == DATA:
            data = payload[1:len(payload) - payload[0]] if flags & PADDED else payload
            self.body[stream] = self.body.get(stream, 0) + len(data)
            if self.auto_window and payload:
                self.send(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", len(payload))))
                if not flags & END_STREAM:
                    self.send(frame(WINDOW_UPDATE, 0, stream, struct.pack(">I", len(payload))))
            if flags & END_STREAM:
                self.finished.add(stream)
                self.on_end(stream)
        elif kind == RST_STREAM:
            self.resets[stream] = struct.unpack(">I", payload[:4])[0]
            self.on_reset(stream)
        elif kind == GOAWAY:
            last, code = struct.unpack(">II", payload[:8])
            self.goaway = (last & 0x7FFFFFFF, code, payload[8:].decode("latin-1"))
        elif kind == WINDOW_UPDATE:
            increment = struct.unpack(">I", payload[:4])[0] & 0x7FFFFFFF
            if stream == 0:
                self.connection_window += increment
            elif stream in self.windows:
                self.windows[stream] += increment

    def header_block_done(self, stream):
        block, ends = self.blocks.pop(stream)
        fields = self.decoder.decode(bytes(block), raw=True)
        if stream not in self.headers:
            self.opened += 1
        self.headers.setdefault(stream, []).append(fields)
        if ends:
            self.finished.add(stream)
        self.on_headers(stream, fields, ends)
        if ends:
            self.on_end(stream)

    def on_headers(self, stream, fields, ends):
        pass

    def on_end(self, stream):
        pass

    def on_reset(self, stream):
        pass

    def status(self, stream):
        for fields in self.headers.get(stream, []):
            for name, value in fields:
                if name == b":status" and not value.startswith(b"1"):
                    return int(value)
        return None


# MARK: - The device


def connect_device(proxy, host, port, ca, **settings):
    raw = socket.create_connection(("127.0.0.1", proxy), timeout=30)
    raw.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    reply = b""
    while b"\r\n\r\n" not in reply:
        chunk = raw.recv(1)
        if not chunk:
            raise SystemExit("the proxy closed the CONNECT")
        reply += chunk
    if b" 200 " not in reply.split(b"\r\n")[0]:
        raise SystemExit("CONNECT refused: " + reply.decode("latin-1"))
    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["h2"])
    tls = context.wrap_socket(raw, server_hostname=host)
    if tls.selected_alpn_protocol() != "h2":
        raise SystemExit(f"ALPN {tls.selected_alpn_protocol()}, not h2")
    peer = Peer(tls, server=False)
    peer.authority = f"{host}:{port}"
    peer.encoder = hpack.Encoder()
    peer.send(PREFACE + settings_frame(enable_push=0, **settings))
    return peer


def request_block(peer, path, method="GET", extra=()):
    return peer.encoder.encode(
        [(":method", method), (":scheme", "https"), (":authority", peer.authority), (":path", path)] + list(extra))


def get(peer, stream, path):
    peer.send(frame(HEADERS, END_STREAM | END_HEADERS, stream, request_block(peer, path)))


def summary(peer, **more):
    statuses, resets = {}, {}
    for stream in peer.headers:
        status = peer.status(stream)
        if status is not None:
            statuses[str(status)] = statuses.get(str(status), 0) + 1
    for code in peer.resets.values():
        resets[code_name(code)] = resets.get(code_name(code), 0) + 1
    result = {"statuses": statuses, "resets": resets, "ended": peer.ended, "acks": peer.acks,
              "goaway": code_name(peer.goaway[1]) if peer.goaway else None,
              "goaway_debug": peer.goaway[2] if peer.goaway else None,
              "body_bytes": sum(peer.body.values()), "written": peer.written, "error": peer.error}
    result.update(more)
    print(json.dumps(result), flush=True)


def wait_for_end(peer, timeout=120):
    """Reads (acking, updating windows) until the proxy ends the connection."""
    peer.run_until(lambda: peer.ended, timeout)


def client_requests(peer, count, paths=("/hostile",), concurrency=50):
    """Well behaved: `count` GETs (of `paths` in turn), at most `concurrency` at once, each read to
    its end or reset."""
    next_stream, done = 1, lambda: len(peer.finished | set(peer.resets))
    opened = 0
    deadline = time.monotonic() + 120
    while (done() < count) and not peer.ended and time.monotonic() < deadline:
        while opened < count and opened - done() < concurrency:
            get(peer, next_stream, paths[opened % len(paths)])
            next_stream += 2
            opened += 1
        peer.pump(0.2)
    summary(peer, opened=opened)


def client_rapid_reset(peer, count):
    """HEADERS then RST_STREAM(CANCEL) on stream after stream, as fast as the socket takes them."""
    stream, sent = 1, 0
    deadline = time.monotonic() + 120
    while sent < count and not peer.ended and time.monotonic() < deadline:
        if len(peer.out) < 1 << 16:
            for _ in range(50):
                peer.send(frame(HEADERS, END_STREAM | END_HEADERS, stream, request_block(peer, "/reset")))
                peer.send(frame(RST_STREAM, 0, stream, struct.pack(">I", 8)))
                stream += 2
                sent += 1
        peer.pump(0.05)
    wait_for_end(peer, 60)
    summary(peer, sent=sent)


def flood(peer, one, count):
    """Writes `count` copies of `one` and reads nothing, until the proxy stops taking them (no
    progress for 5 s) or ends the connection; then reads to the end."""
    queued, last = 0, time.monotonic()
    batch = one * 256
    while not peer.ended:
        if queued < count and len(peer.out) < 1 << 16:
            peer.send(batch)
            queued += 256
        if peer.pump(0.2, read=False):
            last = time.monotonic()
        elif time.monotonic() - last > 5 or (queued >= count and not peer.out):
            break
    written = peer.written
    peer.auto_ack = False
    wait_for_end(peer, 60)
    return written


def client_flood(peer, kind, count):
    # The first SETTINGS and its ACK go out before the flood, so the flood is all the proxy sees.
    peer.run_until(lambda: peer.settings, 30)
    one = frame(PING, 0, 0, b"12345678") if kind == "ping" else frame(SETTINGS, 0, 0)
    written = flood(peer, one, count)
    summary(peer, written_frames=written // len(one))


def client_continuation_flood(peer, count):
    """A request's HEADERS without END_HEADERS, then CONTINUATION after CONTINUATION, each one
    another 1 KB field, never ending the block."""
    peer.send(frame(HEADERS, END_STREAM, 1, request_block(peer, "/continuation")))
    field = b"\x00" + hpack_string(b"x-flood") + hpack_string(b"f" * 1000)
    written = flood(peer, frame(CONTINUATION, 0, 1, field), count)
    summary(peer, written_frames=written // (9 + len(field)))


def client_hpack_bomb(peer, bombs):
    """`bombs` streams, each a ~14 KB header block that decodes to ~40 MB, between two fine GETs on
    the same connection."""
    get(peer, 1, "/fine")
    stream = 3
    for _ in range(bombs):
        block = bomb_block(request_block(peer, "/bomb"), 10000)
        peer.send(frame(HEADERS, END_STREAM | END_HEADERS, stream, block))
        # The bomb's field went into the table of the proxy's decoder too: ours must match it.
        peer.encoder.header_table.add(b"x-bomb", b"b" * 4000)
        stream += 2
    get(peer, stream, "/fine")
    last = stream
    peer.run_until(lambda: (1 in peer.finished or 1 in peer.resets) and (last in peer.finished or last in peer.resets)
                   and len(peer.resets) + len(peer.finished) >= bombs + 2, 120)
    summary(peer, first=peer.status(1), last=peer.status(last),
            bomb_resets=sum(1 for id in range(3, last, 2) if id in peer.resets))


def client_oversized_headers(peer, size):
    """A fine GET, a GET whose header list is `size` bytes (HEADERS and CONTINUATIONs), a fine GET."""
    get(peer, 1, "/fine")
    fields = []
    while sum(len(name) + len(value) + 32 for name, value in fields) < size:
        fields.append((f"x-big-{len(fields)}", "v" * 4000))
    block = request_block(peer, "/oversized", extra=fields)
    pieces = [block[i:i + 16000] for i in range(0, len(block), 16000)]
    peer.send(frame(HEADERS, END_STREAM | (END_HEADERS if len(pieces) == 1 else 0), 3, pieces[0]))
    for index, piece in enumerate(pieces[1:], start=2):
        peer.send(frame(CONTINUATION, END_HEADERS if index == len(pieces) else 0, 3, piece))
    get(peer, 5, "/fine")
    peer.run_until(lambda: all(id in peer.finished or id in peer.resets for id in (1, 3, 5)), 60)
    summary(peer, first=peer.status(1), oversized=peer.status(3),
            oversized_reset=code_name(peer.resets[3]) if 3 in peer.resets else None, last=peer.status(5),
            continuations=len(pieces) - 1)


def client_zero_window(peer, streams):
    """Initial window 0, never a WINDOW_UPDATE: `streams` GETs of a large body, then waits for the
    proxy to give up."""
    peer.auto_window = False
    for index in range(streams):
        get(peer, 1 + 2 * index, "/big")
    # The responses' heads come (HEADERS are not flow-controlled); no body byte can.
    peer.run_until(lambda: len(peer.headers) >= streams, 60)
    heads = len(peer.headers)
    wait_for_end(peer, 120)
    summary(peer, heads=heads)


def client_zero_window_pinging(peer, streams):
    """As zero-window, but busy: a PING every half second, so the connection is never idle. Waits
    (60 s at most) for the proxy to end it, then says how long that took."""
    peer.auto_window = False
    start = time.monotonic()
    for index in range(streams):
        get(peer, 1 + 2 * index, "/big")
    deadline = start + 60
    while not peer.ended and time.monotonic() < deadline:
        peer.send(frame(PING, 0, 0, b"stillhere"[:8]))
        peer.run_until(lambda: False, 0.5)
    summary(peer, heads=len(peer.headers), seconds=round(time.monotonic() - start, 1))


def client_high_stream_ids(peer):
    """Streams 2147483645 and 2147483647 (the last id there is): a device that begins at the end."""
    get(peer, 2147483645, "/fine")
    get(peer, 2147483647, "/fine")
    peer.run_until(lambda: {2147483645, 2147483647} <= peer.finished | set(peer.resets), 60)
    summary(peer, high={str(id): peer.status(id) for id in (2147483645, 2147483647)})


def client_idle(peer, seconds):
    """A GET, then nothing for `seconds` (reading, acking), then another GET: whether the proxy kept
    the connection open between them."""
    get(peer, 1, "/fine")
    peer.run_until(lambda: 1 in peer.finished, 30)
    started = time.monotonic()
    peer.run_until(lambda: False, seconds)
    idle = time.monotonic() - started
    open_after = not peer.ended
    if open_after:
        get(peer, 3, "/fine")
        peer.run_until(lambda: 3 in peer.finished or 3 in peer.resets, 30)
    summary(peer, idle=round(idle, 1), open_after=open_after, second=peer.status(3))


def client_post_unread(peer, streams, size):
    """`streams` POSTs of `size` bytes each, sent as the proxy's windows allow, to an origin that
    never opens its window; then waits for the proxy to give up."""
    for index in range(streams):
        stream = 1 + 2 * index
        peer.send(frame(HEADERS, END_HEADERS, stream, request_block(peer, "/upload", method="POST")))
        peer.windows[stream] = peer.settings.get(SETTING["initial_window_size"], 65535)
    # Waits for the proxy's SETTINGS: its initial window is the one to honour.
    peer.run_until(lambda: peer.settings, 30)
    for index in range(streams):
        peer.windows[1 + 2 * index] = peer.settings.get(SETTING["initial_window_size"], 65535)
    left = {1 + 2 * index: size for index in range(streams)}
    sent = 0
    deadline = time.monotonic() + 120
    while not peer.ended and time.monotonic() < deadline and any(left.values()):
        for stream in left:
            room = min(left[stream], peer.windows[stream], peer.connection_window, 16384)
            if room > 0 and len(peer.out) < 1 << 18:
                peer.send(frame(DATA, END_STREAM if room == left[stream] else 0, stream, b"u" * room))
                left[stream] -= room
                peer.windows[stream] -= room
                peer.connection_window -= room
                sent += room
        peer.pump(0.2)
    wait_for_end(peer, 120)
    summary(peer, sent=sent)


def client(mode, proxy, host, port, ca, argument):
    if mode in ("zero-window", "zero-window-pinging"):
        peer = connect_device(proxy, host, port, ca, initial_window_size=0)
    else:
        peer = connect_device(proxy, host, port, ca)
    count = int(argument) if argument else 0
    if mode == "requests":
        client_requests(peer, count)
    elif mode == "mixed":
        client_requests(peer, count, paths=("/bomb", "/fine"))
    elif mode == "rapid-reset":
        client_rapid_reset(peer, count)
    elif mode in ("ping-flood", "settings-flood"):
        client_flood(peer, mode.split("-")[0], count)
    elif mode == "continuation-flood":
        client_continuation_flood(peer, count)
    elif mode == "hpack-bomb":
        client_hpack_bomb(peer, count)
    elif mode == "oversized-headers":
        client_oversized_headers(peer, count)
    elif mode == "zero-window":
        client_zero_window(peer, count)
    elif mode == "zero-window-pinging":
        client_zero_window_pinging(peer, count)
    elif mode == "high-stream-ids":
        client_high_stream_ids(peer)
    elif mode == "idle":
        client_idle(peer, count)
    elif mode == "post-unread":
        client_post_unread(peer, count, 4 << 20)
    else:
        raise SystemExit("no such client mode: " + mode)


# MARK: - The origin


class Origin(Peer):
    """The origin's end: answers requests as `mode` says."""

    def __init__(self, tls, mode):
        super().__init__(tls, server=True)
        self.mode = mode
        self.encoder = hpack.Encoder()
        self.bodies = {}
        self.resets_sent = 0

    def on_headers(self, stream, fields, ends):
        path = dict(fields).get(b":path", b"")
        if path == b"/fine" or self.mode == "good" and path != b"/big":
            return self.respond(stream, b"fine\n")
        if path == b"/big":
            return self.respond(stream, 16 << 20)
        if self.mode == "reset-all":
            self.send(frame(RST_STREAM, 0, stream, struct.pack(">I", 2)))
            self.resets_sent += 1
        elif self.mode == "hpack-bomb":
            block = bomb_block(self.encoder.encode([(":status", "200")]), 10000)
            self.encoder.header_table.add(b"x-bomb", b"b" * 4000)
            self.send(frame(HEADERS, END_STREAM | END_HEADERS, stream, block))
        elif self.mode == "continuation-flood":
            self.send(frame(HEADERS, END_STREAM, stream, self.encoder.encode([(":status", "200")])))
            field = b"\x00" + hpack_string(b"x-flood") + hpack_string(b"f" * 1000)
            self.written_frames = flood(self, frame(CONTINUATION, 0, stream, field), 1 << 20) // (9 + len(field))
        elif self.mode in ("ping-flood", "settings-flood"):
            self.auto_ack = False
            one = frame(PING, 0, 0, b"12345678") if self.mode == "ping-flood" else frame(SETTINGS, 0, 0)
            self.written_frames = flood(self, one, 1 << 22) // len(one)

    def respond(self, stream, body):
        """A 200 with `body` (bytes, or a length of filler sent as the windows allow)."""
        length = body if isinstance(body, int) else len(body)
        self.send(frame(HEADERS, END_HEADERS, stream, self.encoder.encode(
            [(":status", "200"), ("content-type", "text/plain"), ("content-length", str(length))])))
        self.bodies[stream] = body if isinstance(body, int) else memoryview(body)
        self.windows.setdefault(stream, self.settings.get(SETTING["initial_window_size"], 65535))

    def on_reset(self, stream):
        self.bodies.pop(stream, None)

    def send_bodies(self):
        """DATA as the proxy's windows allow."""
        for stream in list(self.bodies):
            body = self.bodies[stream]
            left = body if isinstance(body, int) else len(body)
            while len(self.out) < 1 << 18:
                room = min(left, self.windows[stream], self.connection_window, 16384)
                if room <= 0 and left:
                    break
                chunk = FILLER[:room] if isinstance(body, int) else bytes(body[:room])
                self.send(frame(DATA, END_STREAM if room == left else 0, stream, chunk))
                body = body - room if isinstance(body, int) else body[room:]
                left -= room
                self.windows[stream] -= room
                self.connection_window -= room
                if not left:
                    break
            if left:
                self.bodies[stream] = body
            else:
                del self.bodies[stream]


FILLER = b"B" * 16384


def serve(raw, context, mode):
    try:
        raw.settimeout(30)
        tls = context.wrap_socket(raw, server_side=True)
    except (OSError, ssl.SSLError):
        return
    origin = Origin(tls, mode)
    initial = {"max_concurrent_streams": 1000}
    if mode == "zero-window":
        initial["initial_window_size"] = 0
        origin.auto_window = False
    origin.send(settings_frame(**initial))
    deadline = time.monotonic() + 300
    while not origin.ended and time.monotonic() < deadline:
        origin.send_bodies()
        origin.pump(0.2)
    print("CONNECTION " + json.dumps({"mode": mode, "streams": origin.opened, "resets_received": len(origin.resets),
                                      "resets_sent": origin.resets_sent,
                                      "written_frames": getattr(origin, "written_frames", 0)}), flush=True)
    try:
        tls.close()
    except OSError:
        pass


def server(mode, certificate, key):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    context.set_alpn_protocols(["h2"])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print("PORT", listener.getsockname()[1], flush=True)
    while True:
        raw, _ = listener.accept()
        threading.Thread(target=serve, args=(raw, context, mode), daemon=True).start()


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        client(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6],
               sys.argv[7] if len(sys.argv) > 7 else None)
