"""The soak's client operations: each makes one or more connections to the proxy, checks the answer,
and returns an Op saying what it saw and which log lines the daemon owes for it.

Every socket has a 30-second timeout (DEADLINE): an operation that waits longer fails as hung.
"""

import hashlib
import random
import socket
import ssl
import struct
import time
from dataclasses import dataclass, field

from upstreams import payload

DEADLINE = 30.0
MIB = 1 << 20


@dataclass
class Op:
    """One client operation's result.

    expected: a connection line owed per item, (client port, method, host, allowed actions), and
    when a fifth item is given, the line's `failure` (None: none);
    intercepted: (client port, request count) per intercepted connection, whose line must say
    `requests` = count, with as many request lines; connections: TCP connections made to the proxy."""
    kind: str
    outcome: str = "?"
    ok: bool = False
    detail: str = ""
    connections: int = 0
    requests: int = 0
    bytes: int = 0
    expected: list = field(default_factory=list)
    intercepted: list = field(default_factory=list)


class Failure(Exception):
    """An answer the operation does not recognise."""


class Mismatch(Failure):
    """Bytes that arrived other than they were sent."""


class Client:
    """The proxy's address, the upstreams' ports and names, and the two trust stores: the test root
    (what passthrough tunnels show) and the daemon's interception CA (what intercepted ones show)."""

    def __init__(self, proxy_port, ports, names, root_pem, ca_pem):
        self.proxy_port = proxy_port
        self.ports = ports
        self.names = names
        self.root = ssl.create_default_context(cafile=root_pem)
        self.ca = ssl.create_default_context(cafile=ca_pem)
        for context in (self.root, self.ca):
            context.set_alpn_protocols(["http/1.1"])

    def connect(self, op):
        """A new TCP connection to the proxy, counted in `op`."""
        sock = socket.create_connection(("127.0.0.1", self.proxy_port), timeout=DEADLINE)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        op.connections += 1
        return sock

    def target(self, role, port_role=None):
        return self.names[role], self.ports[port_role or role]

    def connect_tunnel(self, op, role, port_role=None):
        """CONNECT to the upstream `role`: (socket, status, head)."""
        host, port = self.target(role, port_role)
        sock = self.connect(op)
        sock.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        head = read_head(sock)
        return sock, status_of(head), head


# --- reading ---------------------------------------------------------------------------------------

class Reader:
    """Buffered reads from a socket (plain or TLS) for HTTP responses."""

    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""

    def fill(self):
        chunk = self.sock.recv(262144)
        if not chunk:
            raise Failure("connection closed early")
        self.buffer += chunk

    def head(self):
        while b"\r\n\r\n" not in self.buffer:
            self.fill()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        return head + b"\r\n\r\n"

    def line(self):
        while b"\r\n" not in self.buffer:
            self.fill()
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def take(self, count):
        while len(self.buffer) < count:
            self.fill()
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def response(self, bodiless=False):
        """(status, headers, body) of one response, Content-Length or chunked; `bodiless`: one that
        has no body whatever its head says (to HEAD, a 204 or 304)."""
        head = self.head()
        headers = headers_of(head)
        if bodiless:
            return status_of(head), headers, b""
        if headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.line().split(b";")[0], 16)
                if size == 0:
                    while self.line():
                        pass
                    break
                parts.append(self.take(size))
                self.take(2)
            return status_of(head), headers, b"".join(parts)
        return status_of(head), headers, self.take(int(headers.get("content-length", "0")))


def read_head(sock):
    """Bytes up to and including the blank line ending a response head (no more: a tunnel follows)."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        byte = sock.recv(1)
        if not byte:
            raise Failure(f"closed before a response head ({head[:60]!r})")
        head += byte
    return head


def read_to_end(sock):
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def status_of(head):
    return int(head.split(b" ", 2)[1])


def headers_of(head):
    headers = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    return headers


def request_bytes(method, target, host, body=None, chunked=False, close=False):
    head = f"{method} {target} HTTP/1.1\r\nHost: {host}\r\n"
    head += "Connection: close\r\n" if close else ""
    if body is None:
        return head.encode() + b"\r\n"
    if not chunked:
        return head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body
    framed = b"".join(f"{len(body[i:i + 65536]):x}\r\n".encode() + body[i:i + 65536] + b"\r\n"
                      for i in range(0, len(body), 65536))
    return head.encode() + b"Transfer-Encoding: chunked\r\n\r\n" + framed + b"0\r\n\r\n"


def expect(condition, message):
    if not condition:
        raise Failure(message)


def expect_bytes(condition, message):
    if not condition:
        raise Mismatch(message)


def port_of(sock):
    return sock.getsockname()[1]


# --- HTTP exchanges (plain through the proxy, or inside intercepted TLS) ----------------------------

def exchange(sock, reader, rng, target_prefix, host, close):
    """One random request (GET /data, CL or chunked, or POST /echo, CL or chunked) on `sock`, its
    response checked byte for byte: (the method, the bytes moved)."""
    if rng.random() < 0.5:
        length, chunked = rng.randrange(0, 2 * MIB), rng.random() < 0.5
        sock.sendall(request_bytes("GET", f"{target_prefix}/data?n={length}&chunked={int(chunked)}", host, close=close))
        status, _, body = reader.response()
        expect(status == 200, f"GET /data?n={length}: {status}")
        expect_bytes(body == payload(length), f"GET /data?n={length}: {len(body)} bytes differ")
        return "GET", length
    body = rng.randbytes(rng.randrange(0, MIB))
    sock.sendall(request_bytes("POST", f"{target_prefix}/echo", host, body, chunked=rng.random() < 0.5, close=close))
    status, _, echoed = reader.response()
    expect(status == 200, f"POST /echo of {len(body)}: {status}")
    expect_bytes(echoed == body, f"POST /echo of {len(body)}: {len(echoed)} bytes back differ")
    return "POST", 2 * len(body)


# --- operations ---------------------------------------------------------------------------------------

def tunnel_transfer(client, rng, op):
    """A passthrough tunnel to the hash upstream: up to 3 MiB each way, both SHA-256s checked."""
    sock, status, _ = client.connect_tunnel(op, "hash")
    op.expected.append((port_of(sock), "CONNECT", client.names["hash"], {"allowed"}))
    expect(status == 200, f"CONNECT answered {status}")
    with client.root.wrap_socket(sock, server_hostname=client.names["hash"]) as tls:
        upload = rng.randbytes(rng.randrange(0, 3 * MIB))
        down_length = rng.randrange(0, 3 * MIB)
        tls.sendall(struct.pack(">QQ", len(upload), down_length) + upload)
        reader = Reader(tls)
        expect_bytes(reader.take(32) == hashlib.sha256(upload).digest(), "upload's SHA-256 differs")
        download = reader.take(down_length)
        expect_bytes(reader.take(32) == hashlib.sha256(download).digest() and download == payload(down_length),
               "download differs")
        op.bytes += len(upload) + down_length
    op.outcome = "transferred"


def handshake_refused(client, sock, role):
    """The default --tunnel-start connect: a host's first CONNECT got its 200 before the verdict, so
    a refusal reaches the device as its own TLS would see it: the handshake through the tunnel fails
    (the proxy's alert, or its close at the handshake deadline). Returns how it ended."""
    sock.settimeout(60)
    try:
        with client.root.wrap_socket(sock, server_hostname=client.names[role]):
            pass
    except (ssl.SSLError, OSError) as error:  # SSLError and SSLEOFError, a reset; not a timeout
        expect(not isinstance(error, TimeoutError), f"CONNECT {role}: no end to the handshake in 60 s")
        return type(error).__name__
    raise Failure(f"CONNECT {role}: a handshake through a refused tunnel completed")


def tunnel_blocked(client, rng, op):
    """CONNECT to a non-compliant upstream (TLS 1.1 only, or self-signed): the first one to a host
    gets its 200 and then a failed handshake; once the verdict is cached, a 403 naming the violation."""
    role = rng.choice(["old", "selfsigned"])
    sock, status, head = client.connect_tunnel(op, role)
    with sock:
        op.expected.append((port_of(sock), "CONNECT", client.names[role], {"blocked"}))
        violation = {"old": "tls_version", "selfsigned": "untrusted_chain"}[role]
        if status == 200:
            op.outcome = f"handshake refused ({handshake_refused(client, sock, role)})"
            return
        expect(status == 403 and headers_of(head).get("x-ats-violations") == violation,
               f"CONNECT {role}: {head[:120]!r}")
    op.outcome = f"403 {violation}"


def tunnel_stalled_upstream(client, rng, op):
    """CONNECT to an upstream that never answers the handshake, or drips it, at the handshake
    timeout (10 s): a CONNECT that started the host's probe has its tunnel opened at once (the
    default --tunnel-start connect) and the device's handshake ended then; one that joined a probe
    already under way (another client's) waits for it and gets the 504. Unreachable verdicts are
    never cached."""
    role = rng.choice(["silent", "drip"])
    sock, status, head = client.connect_tunnel(op, role)
    with sock:
        op.expected.append((port_of(sock), "CONNECT", client.names[role], {"failed"}))
        if status == 504:
            op.outcome = "504 (joined a probe under way)"
            return
        expect(status == 200, f"CONNECT {role}: {head[:120]!r}")
        op.outcome = f"ended at the deadline ({handshake_refused(client, sock, role)})"


def tunnel_reset_upstream(client, rng, op):
    """A passthrough tunnel whose upstream resets after 64 KiB of a 1 MiB download: the client sees
    the tunnel end early (an error or EOF), never a complete download."""
    sock, status, _ = client.connect_tunnel(op, "reset")
    op.expected.append((port_of(sock), "CONNECT", client.names["reset"], {"allowed"}))
    expect(status == 200, f"CONNECT answered {status}")
    with client.root.wrap_socket(sock, server_hostname=client.names["reset"]) as tls:
        tls.sendall(struct.pack(">QQ", 0, MIB))
        received, ending = 0, "EOF"
        try:
            while received < MIB + 64:
                chunk = tls.recv(65536)
                if not chunk:
                    break
                received += len(chunk)
        except (ssl.SSLError, ConnectionResetError) as error:
            ending = type(error).__name__
        expect(received < MIB + 64, "a reset upstream's download arrived whole")
    op.outcome = f"cut short ({ending})"


def intercepted_requests(client, rng, op):
    """An intercepted connection (the daemon's CA) with 1-4 keep-alive requests, each checked."""
    sock, status, _ = client.connect_tunnel(op, "web")
    port = port_of(sock)
    op.expected.append((port, "CONNECT", client.names["web"], {"allowed"}))
    expect(status == 200, f"CONNECT answered {status}")
    count = rng.randrange(1, 5)
    with client.ca.wrap_socket(sock, server_hostname=client.names["web"]) as tls:
        reader = Reader(tls)
        for index in range(count):
            op.bytes += exchange(tls, reader, rng, "", client.names["web"], close=index == count - 1)[1]
            op.requests += 1
        read_to_end(tls)
    op.intercepted.append((port, count))
    op.outcome = f"{count} requests"


def intercepted_blocked(client, rng, op):
    """CONNECT to the self-signed upstream, intercepted: the daemon fails the client's handshake
    with a handshake_failure alert (--block-style abort)."""
    sock, status, _ = client.connect_tunnel(op, "selfsigned-icpt", "selfsigned")
    port = port_of(sock)
    op.expected.append((port, "CONNECT", client.names["selfsigned-icpt"], {"blocked"}))
    expect(status == 200, f"CONNECT answered {status}")
    try:
        with client.ca.wrap_socket(sock, server_hostname=client.names["selfsigned-icpt"]):
            raise Failure("the handshake with a blocked host completed")
    except ssl.SSLError as error:
        expect("HANDSHAKE_FAILURE" in str(error).upper(), f"handshake failed otherwise: {error}")
    op.intercepted.append((port, 0))
    op.outcome = "handshake_failure"


# How an origin ends a body early (upstreams.HTTPHandler): (path, whether the client may take the
# body as whole). A response that did not end by its framing, or by the origin's own clean close,
# ends towards the client with a reset and its line says response_truncated (issue 27); only a clean
# end of a body that runs until the close (a FIN; over TLS, close_notify) is a whole response.
CUTS = {
    "cut": ("/cut?n=262144", False),  # Content-Length, a quarter, then a FIN
    "reset": ("/reset?n=262144", False),  # Content-Length, a quarter, then a reset
    "unframed reset": ("/unframed?n=262144&end=reset", False),
    "unframed fin": ("/unframed?n=262144&end=fin", True),
}
# Over TLS, a FIN without close_notify cannot be told from a truncation either.
INTERCEPTED_CUTS = dict(CUTS, **{"unframed eof": ("/unframed?n=262144&end=eof", False)})


def cut_response(sock, name, whole):
    """Reads a cut response to its end: a whole one must be the quarter of payload(262144) the origin
    sent, ending cleanly; any other must end with a reset, never a clean end (issue 27, item 2)."""
    reader = Reader(sock)
    try:
        head = reader.head()
        body = reader.buffer + read_to_end(sock)
    except ConnectionResetError:
        expect(not whole, f"{name}: a whole response ended with a reset")
        return "reset"
    except ssl.SSLEOFError as error:
        # Python reads TLS with SSL_read_ex, so a reset under TLS (SSL_ERROR_SYSCALL) surfaces as an
        # SSLEOFError with no OpenSSL reason; a FIN without close_notify carries one
        # (UNEXPECTED_EOF_WHILE_READING) and is not the reset the contract names.
        if error.reason is not None:
            raise Failure(f"{name}: ended with a FIN without close_notify ({error}), not a reset") from None
        expect(not whole, f"{name}: a whole response ended with a reset")
        return "reset"
    except (Failure, ssl.SSLError) as error:
        raise Failure(f"{name}: ended with {type(error).__name__} ({error}), not a reset") from None
    expect(whole, f"{name}: a cut body ended cleanly ({len(body)} bytes after {head[:40]!r})")
    expect_bytes(body == payload(262144)[:65536], f"{name}: {len(body)} bytes differ")
    return "whole"


def intercepted_cut(client, rng, op):
    """An intercepted request whose origin ends the body early (CUTS): the device gets the head and
    part of the body, then a reset (never close_notify), and the line says response_truncated; a body
    running until the origin's close_notify arrives whole."""
    name = rng.choice(sorted(INTERCEPTED_CUTS))
    path, whole = INTERCEPTED_CUTS[name]
    sock, status, _ = client.connect_tunnel(op, "web")
    port = port_of(sock)
    op.expected.append((port, "CONNECT", client.names["web"], {"allowed"}, None if whole else "response_truncated"))
    expect(status == 200, f"CONNECT answered {status}")
    with client.ca.wrap_socket(sock, server_hostname=client.names["web"], suppress_ragged_eofs=False) as tls:
        tls.sendall(request_bytes("GET", path, client.names["web"]))
        ending = cut_response(tls, name, whole)
    op.requests += 1
    op.intercepted.append((port, 1))
    op.outcome = f"origin {name}: {ending}"


def intercepted_surplus(client, rng, op):
    """An intercepted request whose origin sends bytes beyond its response (upstreams' SURPLUS): the
    device gets the response as framed, then its connection ends; the line says response_surplus."""
    shape = rng.choice(["head", "204", "304", "extra"])
    sock, status, _ = client.connect_tunnel(op, "web")
    port = port_of(sock)
    op.expected.append((port, "CONNECT", client.names["web"], {"allowed"}, "response_surplus"))
    expect(status == 200, f"CONNECT answered {status}")
    with client.ca.wrap_socket(sock, server_hostname=client.names["web"]) as tls:
        method = "HEAD" if shape == "head" else "GET"
        tls.sendall(request_bytes(method, f"/surplus?shape={shape}", client.names["web"]))
        reader = Reader(tls)
        check_surplus_response(reader, shape)
        rest = reader.buffer + read_to_end(tls)
        expect_bytes(rest == b"", f"surplus {shape}: {len(rest)} bytes after the response: {rest[:60]!r}")
    op.requests += 1
    op.intercepted.append((port, 1))
    op.outcome = f"surplus {shape}"


def check_surplus_response(reader, shape):
    """The response to /surplus?shape=…, read as framed: the origin's bytes beyond it are not in it."""
    status, headers, body = reader.response(bodiless=shape in ("head", "204", "304"))
    expect(status == {"head": 200, "204": 204, "304": 304, "extra": 200}[shape], f"surplus {shape}: {status}")
    expect_bytes(body == (b"hello" if shape == "extra" else b"") and "x-smuggled" not in headers,
                 f"surplus {shape}: {body[:60]!r} {headers}")


def plain_requests(client, rng, op):
    """Plain http:// through the proxy to a host the policy lets use cleartext: 1-4 keep-alive requests."""
    host, port = client.target("plain")
    sock = client.connect(op)
    count = rng.randrange(1, 5)
    with sock:
        reader = Reader(sock)
        for index in range(count):
            method, moved = exchange(sock, reader, rng, f"http://{host}:{port}", f"{host}:{port}", close=index == count - 1)
            op.expected.append((port_of(sock), method, host, {"allowed"}))
            op.bytes += moved
            op.requests += 1
    op.outcome = f"{count} requests"


def plain_flip(client, rng, op):
    """Plain http:// to the host only one of the two policies allows: 200 with the body, or 403 with
    Apple's cleartext error (-1022), whichever policy the reloads left in force."""
    host, port = client.target("flip", "plain")
    with client.connect(op) as sock:
        sock.sendall(request_bytes("GET", f"http://{host}:{port}/data?n=1000", f"{host}:{port}", close=True))
        status, headers, body = Reader(sock).response()
        if status == 200:
            expect_bytes(body == payload(1000), "flip: body differs")
            op.expected.append((port_of(sock), "GET", host, {"allowed"}))
            op.requests += 1
        else:
            expect(status == 403 and headers.get("x-ats-error", "").startswith("-1022"), f"flip: {status} {headers}")
            op.expected.append((port_of(sock), "GET", host, {"blocked"}))
    op.outcome = str(status)


def plain_cut(client, rng, op):
    """Plain http:// whose origin ends the body early (CUTS): the client gets part of it, then a
    reset, and the line says response_truncated; a body running until the origin's FIN arrives whole."""
    host, port = client.target("plain")
    name = rng.choice(sorted(CUTS))
    path, whole = CUTS[name]
    with client.connect(op) as sock:
        op.expected.append((port_of(sock), "GET", host, {"allowed"}, None if whole else "response_truncated"))
        sock.sendall(request_bytes("GET", f"http://{host}:{port}{path}", f"{host}:{port}"))
        ending = cut_response(sock, name, whole)
    op.outcome = f"origin {name}: {ending}"


def plain_surplus(client, rng, op):
    """Plain http:// keep-alive: a response with the origin's bytes beyond it (upstreams' SURPLUS),
    then another request on the same connection, which must get its own response, never those bytes
    (the origin's connection is not reused); the first line says response_surplus."""
    host, port = client.target("plain")
    shape = rng.choice(["head", "204", "304", "extra"])
    with client.connect(op) as sock:
        reader = Reader(sock)
        method = "HEAD" if shape == "head" else "GET"
        sock.sendall(request_bytes(method, f"http://{host}:{port}/surplus?shape={shape}", f"{host}:{port}"))
        check_surplus_response(reader, shape)
        op.expected.append((port_of(sock), method, host, {"allowed"}, "response_surplus"))
        sock.sendall(request_bytes("GET", f"http://{host}:{port}/data?n=1000", f"{host}:{port}", close=True))
        status, headers, body = reader.response()
        expect(status == 200 and "x-smuggled" not in headers, f"after surplus {shape}: {status} {headers}")
        expect_bytes(body == payload(1000), f"after surplus {shape}: {body[:60]!r}")
        op.expected.append((port_of(sock), "GET", host, {"allowed"}, None))
    op.requests += 2
    op.outcome = f"surplus {shape}"


# --- hostile clients ------------------------------------------------------------------------------

def slow_head(client, rng, op):
    """A request head trickled in pieces over about 1.5 s (under the 4-s head timeout): served."""
    host, port = client.target("plain")
    data = request_bytes("GET", f"http://{host}:{port}/data?n=5000", f"{host}:{port}", close=True)
    with client.connect(op) as sock:
        op.expected.append((port_of(sock), "GET", host, {"allowed"}))
        for start in range(0, len(data), 8):
            sock.sendall(data[start:start + 8])
            time.sleep(1.5 / (len(data) / 8))
        status, _, body = Reader(sock).response()
        expect(status == 200, f"slow head: {status}")
        expect_bytes(body == payload(5000), "slow head: body differs")
    op.requests += 1
    op.outcome = "200"


def stalled_head(client, rng, op):
    """A head that stops half-way and trickles a byte every 1.5 s past the head timeout (4 s from its
    first byte: the trickle does not extend it): 408, and a failed line naming the request (its request
    line came whole). Bytes still arriving after the 408 are dropped by the daemon's lingering close,
    so no reset overtakes the answer."""
    with client.connect(op) as sock:
        op.expected.append((port_of(sock), "GET", "plain.soak.test", {"failed"}))
        sock.sendall(b"GET http://plain.soak.test/ HTTP/1.1\r\nX-Slow: ")
        for _ in range(4):
            time.sleep(1.5)
            try:
                sock.sendall(b"a")
            except OSError:
                break  # the daemon has answered and stopped lingering: the answer is waiting
        answer = read_to_end(sock)
        expect(answer.startswith(b"HTTP/1.1 408"), f"stalled head: {answer[:60]!r}")
    op.outcome = "408"


def garbage(client, rng, op):
    """Random bytes that are not HTTP (the first not a letter): 400, and a failed line with no host."""
    with client.connect(op) as sock:
        op.expected.append((port_of(sock), "-", "-", {"failed"}))
        sock.sendall(bytes([rng.randrange(0, 0x16)]) + rng.randbytes(rng.randrange(10, 3000)) + b"\r\n\r\n")
        answer = read_to_end(sock)
        expect(answer.startswith(b"HTTP/1.1 400"), f"garbage: {answer[:60]!r}")
    op.outcome = "400"


def oversize_head(client, rng, op):
    """A head over 16 KiB: 431, and a failed line naming the request (its request line came whole).
    The daemon answers once it has read 16 KiB, then half-closes and drops the rest (a lingering
    close), so the 431 always arrives: a reset in its place is a failure."""
    with client.connect(op) as sock:
        op.expected.append((port_of(sock), "GET", "plain.soak.test", {"failed"}))
        sock.sendall(b"GET http://plain.soak.test/ HTTP/1.1\r\nX-Big: " + b"b" * rng.randrange(17000, 40000)
                     + b"\r\n\r\n")
        answer = read_to_end(sock)
        expect(answer.startswith(b"HTTP/1.1 431"), f"oversize: {answer[:60]!r}")
    op.outcome = "431"


def half_closed_plain(client, rng, op):
    """A whole plain request, then the client's FIN (SHUT_WR): the response still arrives whole."""
    host, port = client.target("plain")
    length = rng.randrange(0, MIB)
    with client.connect(op) as sock:
        op.expected.append((port_of(sock), "GET", host, {"allowed"}))
        sock.sendall(request_bytes("GET", f"http://{host}:{port}/data?n={length}", f"{host}:{port}"))
        sock.shutdown(socket.SHUT_WR)
        status, _, body = Reader(sock).response()
        expect(status == 200, f"half-closed: {status}")
        expect_bytes(body == payload(length), f"half-closed: {len(body)} bytes differ")
    op.requests += 1
    op.bytes += length
    op.outcome = "200"


def half_closed_tunnel(client, rng, op):
    """CONNECT to the cleartext host (a tunnel at once, passed through as not TLS), a request inside,
    then the client's FIN: the response comes back whole and the tunnel ends."""
    host, port = client.target("plain")
    length = rng.randrange(0, MIB)
    sock, status, _ = client.connect_tunnel(op, "plain")
    with sock:
        op.expected.append((port_of(sock), "CONNECT", host, {"allowed"}))
        expect(status == 200, f"CONNECT answered {status}")
        sock.sendall(request_bytes("GET", f"/data?n={length}", f"{host}:{port}"))
        sock.shutdown(socket.SHUT_WR)
        reader = Reader(sock)
        status, _, body = reader.response()
        expect(status == 200, f"half-closed tunnel: {status}")
        expect_bytes(body == payload(length), f"half-closed tunnel: {len(body)} bytes differ")
    op.bytes += length
    op.outcome = "200"


def dropped_mid_handshake(client, rng, op):
    """CONNECT, 200, then part of a ClientHello and the client gone (passthrough or intercepted): the
    daemon cannot judge a hello it never got whole, so the line says blocked, with hello_unreadable."""
    role = rng.choice(["hash", "web"])
    sock, status, _ = client.connect_tunnel(op, role)
    with sock:
        op.expected.append((port_of(sock), "CONNECT", client.names[role], {"blocked"}))
        expect(status == 200, f"CONNECT answered {status}")
        hello = client_hello(client.names[role])
        sock.sendall(hello[:rng.randrange(5, len(hello) - 1)])
    op.outcome = "dropped"


def dropped_mid_body(client, rng, op):
    """A plain POST announcing 1 MiB, 64 KiB sent, then the client gone."""
    host, port = client.target("plain")
    with client.connect(op) as sock:
        op.expected.append((port_of(sock), "POST", host, {"allowed", "failed"}))
        sock.sendall(f"POST http://{host}:{port}/echo HTTP/1.1\r\nHost: {host}:{port}\r\n"
                     f"Content-Length: {MIB}\r\n\r\n".encode() + rng.randbytes(65536))
        time.sleep(0.1)
    op.outcome = "dropped"


def dropped_early(client, rng, op):
    """A client that connects and leaves silently, or after half a head: no request, no line."""
    with client.connect(op) as sock:
        if rng.random() < 0.5:
            sock.sendall(b"GET http://plain.soak.test/da")
        time.sleep(0.05)
    op.outcome = "dropped"


_HELLO = {}


def client_hello(name):
    """The bytes of a real ClientHello for `name` (from an in-memory handshake), cached."""
    if name not in _HELLO:
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname=name)
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            pass
        _HELLO[name] = outgoing.read()
    return _HELLO[name]


# Each operation and its weight in the mix.
OPERATIONS = [
    (tunnel_transfer, 6), (tunnel_blocked, 3), (tunnel_stalled_upstream, 1), (tunnel_reset_upstream, 2),
    (intercepted_requests, 6), (intercepted_blocked, 2), (intercepted_cut, 2),
    (intercepted_surplus, 2), (plain_requests, 6), (plain_flip, 3), (plain_cut, 2), (plain_surplus, 2),
    (slow_head, 1), (stalled_head, 1), (garbage, 2), (oversize_head, 2), (half_closed_plain, 2),
    (half_closed_tunnel, 2), (dropped_mid_handshake, 2), (dropped_mid_body, 2), (dropped_early, 2),
]


def run(client, rng, operation):
    """Runs one operation: its Op, with ok False and the reason in detail when it failed or hung."""
    op = Op(kind=operation.__name__)
    started = time.monotonic()
    try:
        operation(client, rng, op)
        op.ok = True
    except (Failure, OSError, ValueError) as error:
        op.outcome, op.detail = "error", f"{type(error).__name__}: {error}"
    if time.monotonic() - started > DEADLINE:
        op.ok, op.outcome, op.detail = False, "hung", f"took {time.monotonic() - started:.1f} s"
    return op
