#!/usr/bin/env python3
"""The soak's upstream servers, all on 127.0.0.1, in one process of their own (standard library only).

Every server runs an accept loop on a thread, and a thread per connection:

  hash      TLS 1.2-1.3 (leaf under the test root): the soak's transfer protocol. The client sends
            a 16-byte head (upload length, download length: big-endian u64), then the upload; the
            server answers SHA-256(upload), then the download (random.Random(download length)
            bytes), then SHA-256(download). Both directions are checked byte for byte.
  web       TLS 1.2-1.3 (leaf under the test root) serving HTTP/1.1 (see HTTPHandler)
  plain     the same HTTP/1.1 server in cleartext
  old       TLS 1.1 only: ATS refuses it
  selfsigned TLS 1.3 with a self-signed leaf: ATS refuses it; serves HTTP/1.1 if ever reached
  silent    accepts and reads, never sends a byte: a handshake that never comes
  drip      sends a TLS record head announcing 16 KiB, then one byte every 0.5 s
  reset     TLS like hash, but after 64 KiB of the download it resets the connection (RST)

Prints one JSON line {"name": port, ...} once every socket listens, then serves until SIGTERM.
"""

import argparse
import hashlib
import json
import random
import signal
import socket
import ssl
import struct
import sys
import threading
import time

# A TLS 1.2 handshake record of 16,384 bytes, starting a ServerHello: never completed at the drip's pace.
DRIP_PREFIX = bytes([0x16, 0x03, 0x03, 0x40, 0x00, 0x02, 0x00, 0x3F, 0xFC, 0x03, 0x03])
MAX_HEAD = 65536


def payload(length):
    """The deterministic bytes the servers send for a download of `length` (clients make the same)."""
    return random.Random(length).randbytes(length)


def read_exact(conn, count):
    """Exactly `count` bytes from `conn`, or ConnectionError when it ends first."""
    parts, have = [], 0
    while have < count:
        chunk = conn.recv(min(count - have, 1 << 20))
        if not chunk:
            raise ConnectionError(f"closed after {have} of {count} bytes")
        parts.append(chunk)
        have += len(chunk)
    return b"".join(parts)


def reset(conn):
    """Closes `conn` with a TCP reset (SO_LINGER 0) instead of a FIN."""
    raw = conn if not isinstance(conn, ssl.SSLSocket) else socket.socket(fileno=conn.detach())
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    raw.close()


# --- the transfer protocol --------------------------------------------------------------------------

def serve_hash(conn, cut_after=None):
    """One transfer (see the module's docstring); `cut_after` bytes of download, then a reset."""
    up_length, down_length = struct.unpack(">QQ", read_exact(conn, 16))
    digest = hashlib.sha256()
    left = up_length
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("closed in the upload")
        digest.update(chunk)
        left -= len(chunk)
    conn.sendall(digest.digest())
    data = payload(down_length)
    if cut_after is not None:
        conn.sendall(data[:cut_after])
        time.sleep(0.05)
        reset(conn)
        return
    conn.sendall(data)
    conn.sendall(hashlib.sha256(data).digest())


# --- HTTP/1.1 -----------------------------------------------------------------------------------------

class HTTPHandler:
    """A small HTTP/1.1 origin, keep-alive and chunked both ways:

      GET  /data?n=N[&chunked=1]  N bytes of payload(N), Content-Length or chunked
      POST /echo                  the request body back (chunked if the request's was)
      GET  /cut?n=N               Content-Length N, a quarter of the body, then a FIN (closes mid-body)
      GET  /reset?n=N             Content-Length N, a quarter of the body, then a reset
      GET  /unframed?n=N&end=E    no Content-Length, not chunked (the body runs until the close):
                                  a quarter of payload(N), then E: `reset`; `fin`, a clean end (over
                                  TLS, close_notify first); `eof`, over TLS a FIN without close_notify
      GET|HEAD /surplus?shape=S   a response and, in the same write, bytes beyond its end (the review's
                                  server bugs, issue 27): S is `head` (a HEAD answered with a 44-byte
                                  body), `204` or `304` (with a body), `extra` (more than the
                                  Content-Length: a second response); then serves on
    """

    # The bytes after each /surplus response: what a proxy reusing the connection would give the
    # client's next request as its response.
    SMUGGLED = b"HTTP/1.1 200 OK\r\nX-Smuggled: yes\r\nContent-Length: 6\r\n\r\nSPLIT!"
    SURPLUS = {
        "head": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 44\r\n\r\n"
                b"<html><body>a body on a HEAD</body></html>\r\n",
        "204": b"HTTP/1.1 204 No Content\r\n\r\n" + SMUGGLED,
        "304": b"HTTP/1.1 304 Not Modified\r\n\r\n" + SMUGGLED,
        "extra": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" + SMUGGLED,
    }

    def __init__(self, conn):
        self.conn = conn
        self.buffer = b""

    def fill(self):
        chunk = self.conn.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        self.buffer += chunk

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

    def head(self):
        """(method, target, headers with lower-case names), or None when the client closed between requests."""
        while b"\r\n\r\n" not in self.buffer:
            if len(self.buffer) > MAX_HEAD:
                raise ConnectionError("head too long")
            try:
                self.fill()
            except ConnectionError:
                if self.buffer:
                    raise
                return None
        text, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = text.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return method, target, headers

    def body(self, headers):
        if headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.line().split(b";")[0], 16)
                if size == 0:
                    while self.line():  # trailers, then the empty line
                        pass
                    return b"".join(parts), True
                parts.append(self.take(size))
                self.take(2)
        return self.take(int(headers.get("content-length", "0"))), False

    def respond(self, body, chunked=False, close=False, status="200 OK"):
        head = f"HTTP/1.1 {status}\r\nContent-Type: application/octet-stream\r\n"
        head += "Transfer-Encoding: chunked\r\n" if chunked else f"Content-Length: {len(body)}\r\n"
        head += "Connection: close\r\n" if close else ""
        self.conn.sendall(head.encode() + b"\r\n")
        if not chunked:
            self.conn.sendall(body)
            return
        for start in range(0, len(body), 100_000):
            piece = body[start:start + 100_000]
            self.conn.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        self.conn.sendall(b"0\r\n\r\n")

    def serve(self):
        while True:
            request = self.head()
            if request is None:
                return
            method, target, headers = request
            body, was_chunked = self.body(headers)
            path, _, query = target.partition("?")
            if "://" in path:  # absolute form, as a proxy forwards it
                path = "/" + path.split("://", 1)[1].partition("/")[2]
            params = dict(p.partition("=")[::2] for p in query.split("&") if p)
            close = headers.get("connection", "").lower() == "close"
            if method == "POST" and path == "/echo":
                self.respond(body, chunked=was_chunked, close=close)
            elif path == "/data":
                self.respond(payload(int(params["n"])), chunked=params.get("chunked") == "1", close=close)
            elif path in ("/cut", "/reset"):
                length = int(params["n"])
                self.conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n".encode())
                self.conn.sendall(payload(length)[:length // 4])
                time.sleep(0.05)
                if path == "/reset":
                    reset(self.conn)
                return
            elif path == "/unframed":
                length = int(params["n"])
                self.conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + payload(length)[:length // 4])
                time.sleep(0.05)
                if params["end"] == "reset":
                    reset(self.conn)
                elif params["end"] == "fin" and isinstance(self.conn, ssl.SSLSocket):
                    # close_notify, without waiting for the peer's (unwrap's second step would).
                    self.conn.settimeout(0.0)
                    try:
                        self.conn.unwrap()
                    except (ssl.SSLWantReadError, OSError):
                        pass
                return
            elif path == "/surplus":
                self.conn.sendall(self.SURPLUS[params["shape"]])
            else:
                self.respond(b"not found\n", close=close, status="404 Not Found")
            if close:
                return


# --- servers ------------------------------------------------------------------------------------------

def tls_context(cert, key, versions=(ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    if versions[0] < ssl.TLSVersion.TLSv1_2:
        context.set_ciphers("DEFAULT:@SECLEVEL=0")
    context.minimum_version, context.maximum_version = versions
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["http/1.1"])
    return context


def handle(conn, role, context):
    """One accepted connection of server `role`; any error just ends it."""
    try:
        conn.settimeout(120)
        if role == "silent":
            while conn.recv(65536):
                pass
            return
        if role == "drip":
            conn.settimeout(0.5)
            for index in range(10_000):
                conn.sendall(DRIP_PREFIX[index:index + 1] or b"\x00")
                try:
                    if conn.recv(65536) == b"":
                        return
                except socket.timeout:
                    pass
            return
        if context is not None:
            conn = context.wrap_socket(conn, server_side=True)
        if role == "hash":
            serve_hash(conn)
        elif role == "reset":
            serve_hash(conn, cut_after=65536)
        elif role == "old":
            conn.recv(1)
        else:
            HTTPHandler(conn).serve()
    except (OSError, ValueError, ConnectionError):
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass


def accept_loop(listener, role, context):
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=handle, args=(conn, role, context), daemon=True).start()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True, help="holds leaf.pem, leaf.key, self.pem, self.key")
    args = parser.parse_args()
    leaf = (f"{args.dir}/chain.pem", f"{args.dir}/leaf.key")
    contexts = {
        "hash": tls_context(*leaf), "web": tls_context(*leaf), "reset": tls_context(*leaf), "plain": None,
        "old": tls_context(*leaf, versions=(ssl.TLSVersion.TLSv1_1, ssl.TLSVersion.TLSv1_1)),
        "selfsigned": tls_context(f"{args.dir}/self.pem", f"{args.dir}/self.key"),
        "silent": None, "drip": None,
    }
    ports = {}
    for role, context in contexts.items():
        listener = socket.create_server(("127.0.0.1", 0), backlog=256)
        ports[role] = listener.getsockname()[1]
        threading.Thread(target=accept_loop, args=(listener, role, context), daemon=True).start()
    print(json.dumps(ports), flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while not stop.wait(0.5):
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
