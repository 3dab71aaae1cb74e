#!/usr/bin/env python3
"""The smuggling corpus's origin: a deliberately lenient HTTP/1.1 server that records every request
it believes it received (README.md in this directory, "The oracle").

    origin.py RECORD_FILE [CERT KEY]

Listens on 127.0.0.1 once per interpretation (VARIANTS), over TLS when given a certificate and
key, prints "PORT <variant> <port>" for each, then "READY". Each connection is read as its
interpretation frames it: where it believes a request starts, it records the request line it finds
there (or the garbage) and answers 200 once the body, as it frames it, is in. Every event is a JSON
line in RECORD_FILE: open, request, close, each with the connection's number.

The interpretations are lenient where real servers were found lenient (the HTTP Garden's
TROPHIES.md, server bug N), so that a proxy forwarding an ambiguity shows up as a request the
origin saw and the proxy did not log:

te  Transfer-Encoding wins. Any Transfer-Encoding field means chunked, whatever its value (44).
    Otherwise the first Content-Length (23), read as Python's int() reads it (10: +, _) or by its
    longest valid prefix (29), empty as 0 (16). Chunk sizes by int(x, 16) (1: 0x, _, +) or their
    longest hex prefix (22), empty as 0 (17); a chunk line also ends at CR and any byte (31); the
    two bytes after chunk data and after the last chunk's line are taken as its CRLF, whatever
    they are, so there are no trailers (39).
cl  Content-Length wins. The last Content-Length (33), read as strtoll(v, 0) reads it (32: a
    leading 0 is octal, 0x hex). Transfer-Encoding counts only as one field whose value is
    exactly chunked; anything else is ignored (11, and transducer bug 9's "server that ignores
    unknown Transfer-Encodings"). Chunk sizes as strtoll(v, 16) reads them (25), lines ending at
    LF, trailers read to the empty line.

Both: empty lines before a request are skipped; the request line is split on runs of SP and HT
(so two spaces or a tab still give a method and a target), any method and version taken; header
lines end at LF (a CR before it dropped), te also at a bare CR (13); a line starting with
whitespace continues the field before it (obs-fold); a line without a colon splits at its first
space (28); field names lose surrounding whitespace, \\x85 and \\xa0 (3, 4, 20); values are cut
at NUL (35) and lose surrounding whitespace and bytes from 0x80 (12, 46).
"""

import json
import re
import socket
import ssl
import sys
import threading

VARIANTS = ("te", "cl")
MAX_LINE = 65536


class Closed(Exception):
    pass


class Record:
    def __init__(self, path):
        self.file = open(path, "a", encoding="ascii")
        self.lock = threading.Lock()
        self.count = 0

    def write(self, **event):
        with self.lock:
            self.file.write(json.dumps(event, ensure_ascii=True) + "\n")
            self.file.flush()

    def next_connection(self):
        with self.lock:
            self.count += 1
            return self.count


class Reader:
    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""

    def fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise Closed()
        self.buffer += data

    def peek(self):
        while not self.buffer:
            self.fill()
        return self.buffer[0]

    def take(self, count):
        while len(self.buffer) < count:
            self.fill()
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def line(self, bare_cr_ends):
        """A line without its ending: LF ends it (a CR before it is dropped); with bare_cr_ends a
        CR not followed by LF ends it too."""
        start = 0
        while True:
            lf = self.buffer.find(b"\n", start)
            cr = self.buffer.find(b"\r", start) if bare_cr_ends else -1
            if cr != -1 and (lf == -1 or cr < lf):
                if cr + 1 >= len(self.buffer):
                    self.fill()  # Is the CR followed by LF? Wait for the next byte.
                    continue
                if self.buffer[cr + 1] != 0x0A:
                    line, self.buffer = self.buffer[:cr], self.buffer[cr + 1 :]
                    return line
            if lf != -1:
                line, self.buffer = self.buffer[:lf], self.buffer[lf + 1 :]
                return line[:-1] if line.endswith(b"\r") else line
            if len(self.buffer) > MAX_LINE:
                raise Closed()
            start = len(self.buffer)
            self.fill()

    def chunk_line_te(self):
        """A chunk-size line for te: ends at LF, or at CR and whatever byte follows it (bug 31)."""
        line = b""
        while True:
            byte = self.take(1)
            if byte == b"\n":
                return line
            if byte == b"\r":
                self.take(1)
                return line
            line += byte
            if len(line) > MAX_LINE:
                raise Closed()


def python_int(text, base):
    try:
        return int(text.decode("latin-1"), base)
    except ValueError:
        return None


def longest_prefix(text, digits, base):
    match = re.match(rb"[%s]*" % digits, text)
    return int(match.group(0), base) if match.group(0) else 0


def strtoll(text, base):
    """C's strtoll: leading whitespace, a sign, 0x for base 16 or 0, a leading 0 for octal in
    base 0, then the longest run of digits; 0 when there is none."""
    text = text.lstrip(b" \t\n\v\f\r")
    sign = 1
    if text[:1] in (b"+", b"-"):
        sign = -1 if text[:1] == b"-" else 1
        text = text[1:]
    if base in (0, 16) and text[:2].lower() == b"0x" and re.match(rb"[0-9a-fA-F]", text[2:3]):
        text, base = text[2:], 16
    elif base == 0:
        base = 8 if text[:1] == b"0" else 10
    digits = {8: b"0-7", 10: b"0-9", 16: b"0-9a-fA-F"}[base]
    return sign * longest_prefix(text, digits, base)


def content_length_te(value):
    value = value.split(b",")[0].strip()
    if value == b"":
        return 0
    number = python_int(value, 10)
    return number if number is not None else longest_prefix(value, b"0-9", 10)


def framing(variant, headers):
    te = [v for n, v in headers if n == b"transfer-encoding"]
    cl = [v for n, v in headers if n == b"content-length"]
    if variant == "te":
        if te:
            return ("chunked", None, "Transfer-Encoding %r" % te)
        if cl:
            return ("length", max(0, content_length_te(cl[0])), "first Content-Length %r" % cl[0])
        return ("none", None, "no framing field")
    if cl:
        return ("length", max(0, strtoll(cl[-1], 0)), "last Content-Length %r as strtoll(,,0)" % cl[-1])
    if len(te) == 1 and te[0].strip().lower() == b"chunked":
        return ("chunked", None, "Transfer-Encoding chunked")
    return ("none", None, "no framing field" if not te else "Transfer-Encoding %r ignored" % te)


def read_chunked(reader, variant):
    while True:
        if variant == "te":
            line = reader.chunk_line_te()
            text = line.split(b";")[0].strip()
            size = 0 if text == b"" else python_int(text, 16)
            if size is None:
                size = longest_prefix(text, b"0-9a-fA-F", 16)
        else:
            line = reader.line(False)
            size = strtoll(line.split(b";")[0], 16)
        if size < 0:
            raise Closed()
        if size == 0:
            if variant == "te":
                reader.take(2)
            else:
                while reader.line(False) != b"":
                    pass
            return
        reader.take(size)
        if variant == "te":
            reader.take(2)
        else:
            reader.line(False)


def clean_value(value):
    value = value.split(b"\x00")[0]
    return value.strip(b" \t" + bytes(range(0x80, 0x100)))


def serve(sock, variant, number, record):
    reader = Reader(sock)
    bare_cr = variant == "te"
    index = 0
    # What the origin holds of a request it has not recorded yet: recorded as it is when the
    # connection ends first (a start the proxy sent and never finished is a start all the same).
    pending = None
    try:
        while True:
            pending = {"start": b"", "headers": []}
            while reader.peek() in (0x0D, 0x0A):
                reader.take(1)
            pending["start"] = reader.buffer[:200]
            start = reader.line(bare_cr)
            pending["start"] = start
            parts = [p for p in re.split(rb"[ \t]+", start) if p]
            if len(parts) < 2:
                pending = None
                record.write(event="request", conn=number, variant=variant, index=index, garbage=True,
                             start=start.decode("latin-1"))
                sock.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            headers = pending["headers"]
            while True:
                line = reader.line(bare_cr)
                if line == b"":
                    break
                if line[:1] in (b" ", b"\t") and headers:
                    name, value = headers[-1]
                    headers[-1] = (name, value + b" " + clean_value(line))
                    continue
                if b":" in line:
                    name, value = line.split(b":", 1)
                else:
                    name, _, value = line.strip(b" \t").partition(b" ")
                headers.append((name.strip(b" \t\x85\xa0").lower(), clean_value(value)))
            pending = None
            kind, count, reason = framing(variant, headers)
            write_request(record, number, variant, index, start, headers, reason)
            index += 1
            options = b",".join(v for n, v in headers if n == b"connection").lower()
            if any(v.strip().lower() == b"100-continue" for n, v in headers if n == b"expect"):
                sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            if kind == "chunked":
                read_chunked(reader, variant)
            elif kind == "length":
                reader.take(count)
            body = b"" if start.split()[0] == b"HEAD" else b"ok\n"
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n" + body)
            if b"close" in options:
                return
    except (Closed, OSError, ssl.SSLError):
        if pending is not None and pending["start"].strip(b"\r\n"):
            write_request(record, number, variant, index, pending["start"], pending["headers"], "cut off")
        return


def write_request(record, number, variant, index, start, headers, reason):
    """A request the origin believes it received: its start line split on SP and HT runs (one
    with fewer than two parts is garbage), its Host, how its body was framed."""
    parts = [p for p in re.split(rb"[ \t]+", start) if p]
    host = next((v for n, v in headers if n == b"host"), b"")
    record.write(event="request", conn=number, variant=variant, index=index, garbage=len(parts) < 2,
                 start=start.decode("latin-1"), method=parts[0].decode("latin-1") if parts else "",
                 target=parts[1].decode("latin-1") if len(parts) > 1 else "", host=host.decode("latin-1"),
                 framing=reason)


def accept_loop(listener, variant, context, record):
    while True:
        sock, _ = listener.accept()
        threading.Thread(target=connection, args=(sock, variant, context, record), daemon=True).start()


def connection(sock, variant, context, record):
    number = record.next_connection()
    record.write(event="open", conn=number, variant=variant)
    try:
        if context is not None:
            try:
                sock = context.wrap_socket(sock, server_side=True)
            except (OSError, ssl.SSLError):
                return
        serve(sock, variant, number, record)
    finally:
        try:
            sock.close()
        finally:
            record.write(event="close", conn=number, variant=variant)


def main():
    record = Record(sys.argv[1])
    context = None
    if len(sys.argv) == 4:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[2], sys.argv[3])
        # An HTTP/1.1 server answers an ALPN offer of http/1.1; the proxy offers the device's list
        # and answers the device with this server's choice.
        context.set_alpn_protocols(["http/1.1"])
    for variant in VARIANTS:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(256)
        threading.Thread(target=accept_loop, args=(listener, variant, context, record), daemon=True).start()
        print("PORT", variant, listener.getsockname()[1], flush=True)
    print("READY", flush=True)
    threading.Event().wait()


main()
