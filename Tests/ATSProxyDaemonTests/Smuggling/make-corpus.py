#!/usr/bin/env python3
"""Writes corpus.jsonl, the request-smuggling corpus (README.md in this directory says what it is).

Run it after changing an entry here: `python3 make-corpus.py` (standard library only; an argument
writes elsewhere). The output is committed, and SmugglingCorpusFileTests checks that it is what
this script writes.

Every payload is bytes with placeholders the test fills per mode (README.md, "Placeholders"):
${T} the request target of the carrier request, ${H} its Host value, ${S} the scheme and
authority, ${P} the carrier's path, ${T:word} a target for another request the proxy should see
(marker word-<id>), and ${id}, four digits. Only ${id} may appear inside bytes that a length
counts (a Content-Length, a chunk size), since it is the only one of fixed width; `length()`
checks that.
"""

import json
import os
import re
import sys

SMUGGLER = "https://github.com/defparam/smuggler/blob/2be871e6151ce85167a277fab21c74c851d8b20b/"
GARDEN = "https://github.com/narfindustries/http-garden/blob/ffb9164c6603f6201c1dc70afb08fd229e2778bc/TROPHIES.md"
ISSUE = "issue 27 (the hostile review's first-request forms)"

RN = b"\r\n"
# The request a payload tries to hide in a body: the origin must never see it unless the proxy
# logged it as a request of its own.
SMUGGLED = b"GET /smuggled-${id} HTTP/1.1\r\nHost: smuggled-${id}.smug.test\r\n\r\n"
# The same with a Content-Length line, for payloads whose hidden request declares a body.
SMUGGLED_CL5 = b"GET /smuggled-${id} HTTP/1.1\r\nHost: smuggled-${id}.smug.test\r\nContent-Length: 5\r\n"


def length(data):
    """The length of bytes a length field counts: ${id} is four digits, nothing else may vary."""
    assert b"${" not in data.replace(b"${id}", b""), data
    return len(data.replace(b"${id}", b"0000"))


entries = []


def add(name, source, reference, link, payload, note="", splits=("whole",)):
    entries.append(
        {
            "name": name,
            "source": source,
            "reference": reference,
            "link": link,
            "note": note,
            "splits": list(splits),
            "bytes": payload.decode("latin-1"),
        }
    )


# --- defparam/smuggler -----------------------------------------------------------------------
#
# smuggler's configs render each "gadget" (a mangled Transfer-Encoding line) into one request
# template and send it in a CL.TE and a TE.CL probe. exhaustive.py tries every byte 0x01-0x1F and
# 0x7F-0xFF in four positions, doubles.py every byte in pairs of positions: 1,768 mutations, which
# the review sent as 5,304 payloads. Most are the same gadget with another byte of one class. Kept
# here: every named gadget, and every positional template of default.py and doubles.py with the 13
# bytes default.py itself samples the range with (its own choice of one byte per class). smuggler
# sends str.encode(), UTF-8: a byte from 0x80 goes out as two (0xFF as C3 BF), and so it does here.

SAMPLE_BYTES = [0x1, 0x4, 0x8, 0x9, 0xA, 0xB, 0xC, 0xD, 0x1F, 0x20, 0x7F, 0xA0, 0xFF]

gadgets = []  # (config file, mutation name, gadget text)


def gadget(config, name, text):
    gadgets.append((config, name, text))


for name, text in [
    ("nameprefix1", " Transfer-Encoding: chunked"),
    ("tabprefix1", "Transfer-Encoding:\tchunked"),
    ("tabprefix2", "Transfer-Encoding\t:\tchunked"),
    ("spacejoin1", "Transfer Encoding: chunked"),
    ("underjoin1", "Transfer_Encoding: chunked"),
    ("smashed", "Transfer Encoding:chunked"),
    ("space1", "Transfer-Encoding : chunked"),
    ("valueprefix1", "Transfer-Encoding:  chunked"),
    ("vertprefix1", "Transfer-Encoding:\u000bchunked"),
    ("commaCow", "Transfer-Encoding: chunked, cow"),
    ("cowComma", "Transfer-Encoding: cow, chunked"),
    ("contentEnc", "Content-Encoding: chunked"),
    ("linewrapped1", "Transfer-Encoding:\n chunked"),
    ("quoted", 'Transfer-Encoding: "chunked"'),
    ("aposed", "Transfer-Encoding: 'chunked'"),
    ("lazygrep", "Transfer-Encoding: chunk"),
    ("sarcasm", "TrAnSFer-EnCODinG: cHuNkeD"),
    ("yelling", "TRANSFER-ENCODING: CHUNKED"),
    ("0dsuffix", "Transfer-Encoding: chunked\r"),
    ("tabsuffix", "Transfer-Encoding: chunked\t"),
    ("revdualchunk", "Transfer-Encoding: cow\r\nTransfer-Encoding: chunked"),
    ("0dspam", "Transfer\r-Encoding: chunked"),
    ("nested", "Transfer-Encoding: cow chunked bar"),
    ("spaceFF", "Transfer-Encoding:\xffchunked"),
    ("accentCH", "Transfer-Encoding: ch\x96nked"),
    ("accentTE", "Transf\x82r-Encoding: chunked"),
    ("x-rout", "X:X\rTransfer-Encoding: chunked"),
    ("x-nout", "X:X\nTransfer-Encoding: chunked"),
]:
    gadget("configs/exhaustive.py", name, text)

for i in SAMPLE_BYTES:
    c = chr(i)
    for name, text in [
        ("midspace", "Transfer-Encoding:%cchunked"),
        ("postspace", "Transfer-Encoding%c: chunked"),
        ("prespace", "%cTransfer-Encoding: chunked"),
        ("endspace", "Transfer-Encoding: chunked%c"),
        ("xprespace", "X: X%cTransfer-Encoding: chunked"),
        ("endspacex", "Transfer-Encoding: chunked%cX: X"),
        ("rxprespace", "X: X\r%cTransfer-Encoding: chunked"),
        ("xnprespace", "X: X%c\nTransfer-Encoding: chunked"),
        ("endspacerx", "Transfer-Encoding: chunked\r%cX: X"),
        ("endspacexn", "Transfer-Encoding: chunked%c\nX: X"),
    ]:
        gadget("configs/default.py", "%s-%02x" % (name, i), text % c)
    for name, text in [
        ("%02x-%02x-XX-XX", "%cTransfer-Encoding%c: chunked"),
        ("%02x-XX-%02x-XX", "%cTransfer-Encoding:%cchunked"),
        ("%02x-XX-XX-%02x", "%cTransfer-Encoding: chunked%c"),
        ("XX-%02x-%02x-XX", "Transfer-Encoding%c:%cchunked"),
        ("XX-%02x-XX-%02x", "Transfer-Encoding%c: chunked%c"),
        ("XX-XX-%02x-%02x", "Transfer-Encoding:%cchunked%c"),
    ]:
        gadget("configs/doubles.py", name % (i, i), text % (c, c))


def smuggler_request(gadget_bytes, content_length, body):
    """smuggler's render_template (configs/*.py) with the cookie-less probe of smuggler.py."""
    return (
        b"POST ${T} HTTP/1.1\r\n"
        + gadget_bytes
        + RN
        + b"Host: ${H}\r\n"
        + b"User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        + b"Chrome/78.0.3904.87 Safari/537.36\r\n"
        + b"Content-type: application/x-www-form-urlencoded; charset=UTF-8\r\n"
        + b"Content-Length: %d\r\n" % content_length
        + RN
        + body
    )


seen_gadgets = {}
for config, name, text in gadgets:
    data = text.encode("utf-8")
    if data in seen_gadgets:
        continue  # default.py repeats exhaustive.py's named gadgets and some positions coincide.
    seen_gadgets[data] = name
    reference = 'smuggler %s, mutations["%s"]' % (config, name)
    # CL.TE (smuggler's _check_clte, with a request where its probe has "1\r\nZ"): the whole body
    # by Content-Length, a last chunk then a request by Transfer-Encoding.
    body = b"0\r\n\r\n" + SMUGGLED
    add(
        "smuggler-%s-clte" % name,
        "defparam/smuggler",
        reference + ", CL.TE shape",
        SMUGGLER + config,
        smuggler_request(data, length(body), body),
        note="body: a last chunk, then a request; Content-Length counts both",
    )
    # TE.CL (smuggler's _check_tecl): a chunk holding a request, Content-Length covering only the
    # chunk-size line.
    chunk = b"%x\r\n" % length(SMUGGLED)
    body = chunk + SMUGGLED + b"\r\n0\r\n\r\n"
    add(
        "smuggler-%s-tecl" % name,
        "defparam/smuggler",
        reference + ", TE.CL shape",
        SMUGGLER + config,
        smuggler_request(data, length(chunk), body),
        note="body: one chunk holding a request; Content-Length counts only its size line",
    )

# --- The HTTP Garden --------------------------------------------------------------------------
#
# TROPHIES.md lists the parser discrepancies the Garden found: 48 server bugs and 24 transducer
# (proxy) bugs, each with a payload. Each is adapted: the target and Host become the corpus's
# (${T}, ${H}), a request hidden in a body becomes /smuggled-${id}, and lengths are recomputed.
# Where the Garden's payload only shows an origin reading a length differently, the body becomes a
# hidden request, so that a proxy that forwards the ambiguity is caught by the origin seeing it.

SPLITS = ("whole", "lines", "head-bytes")


def garden(kind, number, title, payload, note=""):
    label = "server" if kind == "server" else "transducer"
    add(
        "garden-%s-%d" % (label, number),
        "HTTP Garden",
        "TROPHIES.md, %s bug %d: %s" % ("Server" if kind == "server" else "Transducer", number, title),
        GARDEN,
        payload,
        note=note,
        splits=SPLITS,
    )


def head(first_line, *fields):
    return first_line + RN + b"".join(f + RN for f in fields) + RN


GET = b"GET ${T} HTTP/1.1"
POST = b"POST ${T} HTTP/1.1"
HOST = b"Host: ${H}"
TE = b"Transfer-Encoding: chunked"

inner = b"\r\n" + SMUGGLED_CL5
garden(
    "server", 1, "The Python int constructor is used to parse chunk-sizes, so 0x, _, + and - are misinterpreted",
    head(GET, HOST, TE) + b"0_%x\r\n" % length(inner) + inner + b"\r\n0\r\n\r\n",
    note="0_NN is 0 by its longest valid prefix and NN by Python's int(); also server bug 22 (longest valid prefix)")
garden("server", 2, "\\x00, \\r or \\n are incorrectly permitted in header values",
       head(GET, HOST, b"Header: v\x00\ralue"))
garden("server", 3, "Whitespace is incorrectly stripped from the ends of header names",
       head(GET, HOST, b"Content-Length : %d" % length(SMUGGLED)) + SMUGGLED)
garden("server", 4, "Whitespace is incorrectly stripped from the beginning of the first header name",
       head(GET, b"\tContent-Length: %d" % length(SMUGGLED)) + SMUGGLED,
       note="the Garden's body is X; here a request, so a proxy that honours the length and an origin that does not disagree visibly")
garden("server", 5, "HTTP versions are interpreted as their longest valid prefix", head(b"GET ${T} HTTP/1.32"))
garden("server", 6, "HTTP methods are interpreted as their longest valid prefix",
       head(b'G=":<>(e),[T];?" ${T} HTTP/1.1'))
garden("server", 7, "URIs are not validated whatsoever", head(b"GET ${T}! HTTP/1.1"),
       note="the Garden's target is !; here the carrier's with ! after it")
garden("server", 8, "Some non-ASCII bytes are incorrectly permitted in header names", head(GET, b"\xefoo: bar"))
garden("server", 9, "\\n is allowed as separating whitespace in a request line", b"GET ${T}\nHTTP/1.1\r\n\r\n")
garden("server", 10, "The Python int constructor is used to parse Content-Length values, so _, + and - are misinterpreted",
       head(GET, HOST, b"Content-Length: +%s" % b"_".join(bytes([d]) for d in b"%d" % length(SMUGGLED))) + SMUGGLED,
       note="the Garden's +1_0 with a body of 10; here +N_N with a request as the body")
garden("server", 11, "Requests containing multiple Transfer-Encoding: chunked headers are accepted and treated as having no message body",
       head(POST, TE, TE) + b"1\r\nZ\r\n0\r\n\r\n")
garden("server", 12, "\\xa0 and \\x85 are stripped from the beginnings and ends of header values",
       head(POST, HOST, b"Transfer-Encoding: \xa0chunked\xa0") + b"0\r\n\r\n")
garden("server", 13, "\\r is treated as a line terminator in header field lines",
       head(GET, HOST, b"Visible: :/\rSmuggled: :)"))
garden("server", 14, "Disallowed ASCII characters are incorrectly permitted in header names",
       head(GET, b'\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\x0b\x0c\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19'
            b'\x1a\x1b\x1c\x1d\x1e\x1f "(),/;<=>?@[/]{}: whatever'))
garden("server", 15, "HTTP versions are not validated", b"GET ${T} HTTP/\r\r1.1\r\n\r\n")
garden("server", 16, "Empty Content-Length values are treated as though they were 0",
       head(GET, HOST, b"Content-Length: "))
garden("server", 17, "Empty chunk-sizes are treated as though they were 0", head(GET, HOST, TE) + b"\r\n\r\n")
garden("server", 18, "Empty header names are erroneously accepted", head(GET, b": ignored", HOST))
garden("server", 19, "All non-\\r\\n whitespace sequences are stripped from the beginnings of header values",
       GET + RN + HOST + RN + b"Useless:\n\nGET ${T:second} HTTP/1.1\r\n\r\n",
       note="the second request is one the proxy may see (it ends the head at \\n\\n) and log")
garden("server", 20, "\\xa0 and \\x85 bytes are stripped from the ends of header names, before the :",
       head(GET, HOST, b"Content-Length\x85: %d" % length(SMUGGLED)) + SMUGGLED)
body = b"0\r\n\r\n" + SMUGGLED
garden("server", 21, ",chunked is treated as an encoding distinct from chunked",
       head(GET, HOST, b"Transfer-Encoding: ,chunked", b"Content-Length: %d" % length(body)) + body,
       note="Content-Length covers a request after the last chunk (the Garden's covers the last chunk only)")
garden("server", 23, "Requests with multiple conflicting Content-Length headers are accepted, prioritizing the first",
       head(GET, HOST, b"Content-Length: 0", b"Content-Length: %d" % length(SMUGGLED)) + SMUGGLED,
       note="the first says 0, the second the hidden request's length (the Garden's 1 and 0 with a body Z)")
garden("server", 24, "8-bit integer overflow in HTTP version numbers", head(b"GET ${T} HTTP/4294967295.255"))
garden("server", 25, "Chunk-sizes are parsed using strtoll(,,16), so 0x, + and - prefixes are erroneously accepted",
       head(GET, TE) + b"-0x0\r\n\r\n" + SMUGGLED,
       note="the Garden's payload stops at the head; -0x0 is transducer bug 19's chunk size")
garden("server", 26, "Negative Content-Length headers can be used to force the server into an infinite busy loop",
       head(GET, HOST, b"Content-Length: -48"))
garden("server", 27, "The HTTP header block is truncated upon receipt of a header with no name or value",
       head(GET, b":", b"I: am chopped off"))
garden("server", 28, "Header names can be separated from values on space alone; no : required",
       head(GET, b"Content-Length %d" % length(SMUGGLED)) + SMUGGLED)
garden("server", 29, "Invalid Content-Length headers are interpreted as equivalent to their longest valid prefix",
       head(GET, b"Content-Length: 1Z") + b"Z")
garden("server", 30, "The HTTP header block can be incorrectly terminated on \\r\\n\\rX, where X can be any byte",
       GET + RN + HOST + RN + b"\rZGET /smuggled-${id}: HTTP/1.1\r\nHost: smuggled-${id}.smug.test\r\n\r\n")
data = b"E\r\n0\r\n\r\n" + SMUGGLED_CL5
garden("server", 31, "Chunk lines are incorrectly terminated on \\rX, where X can be any byte",
       head(GET, HOST, TE) + b"5\r\r;ABCD\r\n%x\r\n" % length(data) + data + b"\r\n0\r\n\r\n")
# Content-Length 0200: 200 bytes as decimal, 128 as strtoll(,,0) reads it (octal); the 72 between
# hold the hidden request and blank lines.
pad = 200 - 128 - length(SMUGGLED)
assert pad >= 0 and pad % 2 == 0
garden("server", 32, "Content-Length headers are interpreted with strtoll(,,0), so leading 0, +, - and 0x are misinterpreted",
       head(GET, HOST, b"Content-Length: 0200") + b"x" * 128 + SMUGGLED + b"\r\n" * (pad // 2),
       note="0200 is 200 in decimal and 128 in octal: the request sits in bytes 128-190 of the body")
garden("server", 33, "Requests with multiple conflicting Content-Length headers are accepted, prioritizing the last",
       head(GET, HOST, b"Content-Length: %d" % length(SMUGGLED), b"Content-Length: 0") + SMUGGLED,
       note="the last says 0 (the Garden's 0 then 1 with a body Z)")
garden("server", 34, "\\r is permitted in header values", head(GET, HOST, b"Header: va\rlue"))
garden("server", 35, "Header values are truncated at \\x00",
       head(GET, HOST, b"Test: test\x00THESE BYTES GET DROPPED", b"Connection: close"))
garden("server", 36, "Carriage returns are forwarded within the optional whitespace following the semicolon in a chunk extension",
       head(b"POST ${T} HTTP/1.1", TE, HOST) + b"41;a=b\r\r" + b"X" * 65 + b"\r\n0\r\n\r\n"
       + b"GET /smuggled-${id} HTTP/1.1\r\nHost: smuggled-${id}.smug.test\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
       note="the hidden request's Content-Length is 5 (the Garden's 412 swallowed h2o's next request)")
body = b"0\r\n\r\n" + SMUGGLED
garden("server", 37, "Header names can be continued across lines",
       head(POST, HOST, b"Transfer-", b"Encoding: chunked", b"Content-Length: %d" % length(body)) + body)
garden("server", 38, "Empty Content-Length in requests are interpreted as read until timeout occurs",
       head(GET, HOST, b"Content-Length: ") + b"GET ${T:second} HTTP/1.1\r\nHost: ${H}\r\n\r\n")
garden("server", 39, "Chunked message bodies are terminated on \\r\\nXX, where XX can be any two bytes",
       head(GET, TE) + b"0\r\nX:GET /smuggled-${id} HTTP/1.1\r\n\r\n",
       note="the Garden's trailer X:POST / HTTP/1.1; here the hidden request's line")
garden("server", 40, "HTTP methods and versions are not validated", head(b"\x00 ${T} HTTP/............0596.7407."))
garden("server", 41, "\\xa0 and \\x85 are stripped from the beginnings and ends of header values, except for Transfer-Encoding",
       head(GET, HOST, b"User: \x85admin\xa0"))
tail = b"GET /second-${id} HTTP/1.1\r\n\r\n"
hidden = b"POST /smuggled-${id} HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % length(tail)
garden("server", 42, "Empty Content-Length values are interpreted as equivalent to 0, and prioritized over any subsequent Content-Length values",
       head(GET, b"Content-Length: ", b"Content-Length: %d" % length(hidden)) + hidden + tail)
garden("server", 43, "\\x00 is stripped from the ends of header values", head(GET, b"Evil: evil\x00"))
garden("server", 44, "All unknown transfer codings are treated as equivalent to chunked",
       head(POST, HOST, b"Transfer-Encoding: blegh") + b"1\r\nZ\r\n0\r\n\r\n")
garden("server", 45, "Connections are closed prematurely when an invalid request is pipelined after a valid request",
       head(GET, b"Connection: close") + b"Invalid\r\n\r\n")
garden("server", 46, "Bytes greater than \\x80 are stripped from the beginnings and ends of header values",
       head(POST, b"Host: \xff${H}\xff", b"Transfer-Encoding: \xffchunked\xff") + b"1\r\nZ\r\n0\r\n\r\n")
garden("server", 47, "When an invalid chunk is received, the next message is placed after the first \\r\\n following it",
       head(POST, HOST, TE) + b"INVALID!!!\r\n" + SMUGGLED)
third = b"GET /smuggled-${id} HTTP/1.1\r\nHost: smuggled-${id}.smug.test\r\nid: 2\r\n\r\n"
garden("server", 48, "Pipelined requests in the initial request buffer are interpreted as the body of the first, even with Content-Length: 0",
       head(POST, b"Content-Length: 0", b"Connection:keep-alive", HOST, b"id: 0")
       + head(b"POST ${T:second} HTTP/1.1", HOST, b"id: 1", b"Content-Length: %d" % length(third)) + third,
       note="the third request is the second's body; the Garden sends it in a second packet")

garden("transducer", 1, "0x-prefixed Content-Length values are incorrectly accepted and forwarded, without validation of the message body",
       head(POST, HOST, b"Content-Length: 0x10") + b"Z")
garden("transducer", 2, "Invalid chunk-size values are incorrectly accepted and forwarded",
       head(POST, HOST, TE) + b"Z\r\nZZ\r\nZZZ\r\n\r\n")
garden("transducer", 3, "\\r is incorrectly permitted in chunk-ext whitespace before the ;",
       head(POST, HOST, TE) + b"2\r\r;a\r\n02\r\n41\r\n0\r\n\r\n"
       + b"GET /smuggled-${id} HTTP/1.1\r\nHost: smuggled-${id}.smug.test\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
       note="the hidden request's Content-Length is 5 (the Garden's 430 swallowed the next request)")
garden("transducer", 4, "Messages containing invalid chunks are forwarded without their message bodies",
       head(b"POST ${T}  HTTP/1.1", TE) + b"1\r0\n")
garden("transducer", 5, "Empty Content-Length headers are incorrectly forwarded",
       head(GET, b"host: ${H}", b"content-length: "))
garden("transducer", 6, "Disallowed bytes are accepted and forwarded within header names",
       head(GET, HOST, b"Header\x85: value"))
garden("transducer", 7, "Chunk-sizes are interpreted as their longest valid prefix, and re-emitted",
       head(POST, TE) + b"1these-bytes-never-get-validated\r\nZ\r\n0\r\n\r\n")
garden("transducer", 9, "Transfer-Encoding: ,chunked headers are forwarded intact, and interpreted as equivalent to chunked",
       head(POST, HOST, b"Transfer-Encoding: ,chunked") + b"0\r\n\r\n")
garden("transducer", 10, "\\r is incorrectly forwarded in header values",
       head(GET, b"Invalid-Header: this\rvalue\ris\rinvalid"))
last = b"GET /second-${id} HTTP/1.1\r\nhost: second-${id}.smug.test\r\n\r\n"
hidden = b"POST /smuggled-${id} HTTP/1.1\r\nhost: smuggled-${id}.smug.test\r\ncontent-length: %d\r\n\r\n" % length(last)
garden("transducer", 11, "Empty Content-Length headers are incorrectly forwarded, even with other Content-Length headers, if the empty one comes first",
       head(GET, b"host: ${H}", b"content-length: ", b"content-length: %d" % length(hidden)) + hidden + last)
garden("transducer", 12, "\\x00 is forwarded in header values", head(GET, b"Host: ${H}\x00.kallus.org"))
garden("transducer", 13, "Bare \\n is accepted as a chunk line terminator",
       head(GET, TE) + b"a\r\n0123456789\n0\r\n\r\n")
garden("transducer", 14, "Field lines with no : are forwarded as-is",
       head(GET, HOST, b"Te\nst: test", b"Connection: close"))
garden("transducer", 15, "Requests with both Content-Length and Transfer-Encoding are forwarded as-is if the Transfer-Encoding is unrecognized",
       head(GET, HOST, b"Transfer-Encoding: ,chunked", b"Content-Length: 5", b"Connection: close") + b"0r\n\r\n")
garden("transducer", 16, "\\n is not normalized to \\r\\n in forwarded messages",
       b"GET ${T} HTTP/1.1\nHost: ${H}\nConnection: close\n\n")
data = b"0\r\n\r\nGET /smuggled-${id} HTTP/1.1\r\n\r\n"
garden("transducer", 17, "Chunked bodies with an extra \\r\\n before the terminator chunk are un-chunked without replacing Transfer-Encoding",
       head(POST, HOST, TE) + b"%x\r\n" % length(data) + data + b"\r\n\r\n0\r\n\r\n")
garden("transducer", 18, "Transfer-Encoding: ,chunked headers are forwarded intact, and are not interpreted as equivalent to chunked",
       head(GET, HOST, b"Transfer-Encoding: ,chunked", b"Content-Length: 5") + b"0\r\n\r\n")
garden("transducer", 19, "Chunk-sizes with +, - and 0x prefixes are interpreted and forwarded",
       head(POST, TE) + b"-0x0\r\n\r\n")
garden("transducer", 20, "Headers containing \\x00 or \\n are concatenated into the previous header's value",
       head(GET, b"a:b", b"c\x00"))
garden("transducer", 21, "Message bodies are stripped from GET requests without removing their Content-Length headers",
       head(GET, b"Content-Length: %d" % length(SMUGGLED)) + SMUGGLED,
       note="the Garden's body 1234567890; here a request")
garden("transducer", 22, "Requests containing multiple Content-Length headers are forwarded, prioritizing the last",
       head(POST, HOST, b"Content-Length: 0", b"Content-Length: %d" % length(SMUGGLED)) + SMUGGLED)
body = b"0\r\n\r\n" + SMUGGLED
garden("transducer", 23, "Requests containing both Content-Length and Transfer-Encoding are forwarded",
       head(POST, HOST, b"Content-Length: %d" % length(body), TE) + body,
       note="Content-Length covers a request after the last chunk (the Garden's covers the last chunk only)")
garden("transducer", 24, "Whitespace-prefixed chunk-sizes are accepted and forwarded",
       head(POST, HOST, TE) + b"           0\r\n\r\n")
garden("transducer", 25, "Requests containing multiple Transfer-Encoding: chunked headers are forwarded, and treated as one",
       head(POST, HOST, TE, TE) + b"0\r\n\r\n")

# --- The review's malformed first requests (issue 27) ------------------------------------------
#
# In intercept mode the review found each of these, sent as the first request inside the TLS, was
# relayed to the origin without a request line in the log. The issue names leading CRLF or LF,
# two spaces or a tab in the request line, a 33-byte method, HTTP/1.2, lower-case http/1.1,
# HTTP/1.32 and a NUL method; with each whitespace form on both sides of the target that makes
# eleven, and the last two are their siblings (a space after the version, HTTP/2.0).

for name, line in [
    ("leading-crlf", b"\r\nGET ${T} HTTP/1.1"),
    ("leading-lf", b"\nGET ${T} HTTP/1.1"),
    ("two-spaces-after-method", b"GET  ${T} HTTP/1.1"),
    ("two-spaces-before-version", b"GET ${T}  HTTP/1.1"),
    ("tab-after-method", b"GET\t${T} HTTP/1.1"),
    ("tab-before-version", b"GET ${T}\tHTTP/1.1"),
    ("method-33-bytes", b"A" * 33 + b" ${T} HTTP/1.1"),
    ("http-1.2", b"GET ${T} HTTP/1.2"),
    ("lower-case-version", b"GET ${T} http/1.1"),
    ("http-1.32", b"GET ${T} HTTP/1.32"),
    ("nul-method", b"\x00 ${T} HTTP/1.1"),
    ("space-after-version", b"GET ${T} HTTP/1.1 "),
    ("http-2.0", b"GET ${T} HTTP/2.0"),
]:
    add("review-first-" + name, "issue 27 review", ISSUE, "", head(line, HOST), splits=SPLITS)

# --- atsproxy's own: what the sources above leave out of the issue's list --------------------


def own(name, payload, note=""):
    add("own-" + name, "atsproxy", "issue 27: forms the sources above do not cover", "", payload, note=note,
        splits=SPLITS)


chunk = b"%x\r\n" % length(SMUGGLED)
own("chunk-size-16-digits", head(POST, HOST, TE) + b"%016x\r\n" % length(SMUGGLED) + SMUGGLED + b"\r\n0\r\n\r\n",
    note="16 hex digits, most of them leading zeros: the proxy's limit")
own("chunk-size-17-digits", head(POST, HOST, TE) + b"%017x\r\n" % length(SMUGGLED) + SMUGGLED + b"\r\n0\r\n\r\n")
own("chunk-size-upper-case", head(POST, HOST, TE) + (b"%X\r\n" % length(SMUGGLED)) + SMUGGLED + b"\r\n0\r\n\r\n")
own("chunk-size-0x", head(POST, HOST, TE) + b"0x%x\r\n" % length(SMUGGLED) + SMUGGLED + b"\r\n0\r\n\r\n")
own("chunk-size-plus", head(POST, HOST, TE) + b"+%x\r\n" % length(SMUGGLED) + SMUGGLED + b"\r\n0\r\n\r\n")
own("chunk-size-space-before", head(POST, HOST, TE) + b" %x\r\n" % length(SMUGGLED) + SMUGGLED + b"\r\n0\r\n\r\n")
own("chunk-size-space-after", head(POST, HOST, TE) + b"%x \r\n" % length(SMUGGLED) + SMUGGLED + b"\r\n0\r\n\r\n")
own("chunk-size-bare-lf", head(POST, HOST, TE) + b"%x\n" % length(SMUGGLED) + SMUGGLED + b"\r\n0\r\n\r\n")
own("chunk-data-bare-lf", head(POST, HOST, TE) + chunk + SMUGGLED + b"\n0\r\n\r\n")
own("chunk-size-overflow-32-bits", head(POST, HOST, TE) + b"1%08x\r\n" % length(SMUGGLED) + SMUGGLED + b"\r\n0\r\n\r\n",
    note="2^32 + N: a parser that keeps 32 bits reads N")
own("chunk-size-overflow-64-bits", head(POST, HOST, TE) + b"1%016x\r\n" % length(SMUGGLED) + SMUGGLED
    + b"\r\n0\r\n\r\n")
own("chunk-ext-token", head(POST, HOST, TE) + b"%x;a=b;c\r\n" % length(SMUGGLED) + SMUGGLED + b"\r\n0\r\n\r\n")
own("chunk-ext-spaces", head(POST, HOST, TE) + b"%x ; a = b\r\n" % length(SMUGGLED) + SMUGGLED + b"\r\n0\r\n\r\n")
own("chunk-ext-quoted", head(POST, HOST, TE) + b'%x;a="x;y\\"z\r\n' % length(SMUGGLED) + b'"\r\n'
    + SMUGGLED + b"\r\n0\r\n\r\n",
    note="a quoted-string holding a CR LF: a parser that reads the line to its first LF disagrees")
own("chunk-ext-quoted-semicolon", head(POST, HOST, TE) + b'%x;a="x;y"\r\n' % length(SMUGGLED) + SMUGGLED
    + b"\r\n0\r\n\r\n")
own("chunk-ext-bare-cr", head(POST, HOST, TE) + b"%x;a\rb\r\n" % length(SMUGGLED) + SMUGGLED + b"\r\n0\r\n\r\n")
own("chunk-ext-nul", head(POST, HOST, TE) + b"%x;a\x00\r\n" % length(SMUGGLED) + SMUGGLED + b"\r\n0\r\n\r\n")
own("chunk-ext-on-last", head(POST, HOST, TE) + b"0;a=b\r\n\r\n")
own("chunk-trailer", head(POST, HOST, TE) + b"0\r\nX-Trailer: yes\r\n\r\n")
own("chunk-trailer-content-length", head(POST, HOST, TE) + b"0\r\nContent-Length: %d\r\n\r\n" % length(SMUGGLED)
    + SMUGGLED)
own("chunk-missing-crlf-after-data", head(POST, HOST, TE) + b"5\r\nhello0\r\n\r\n")
own("chunked-then-pipelined", head(POST, HOST, TE) + b"0\r\n\r\n" + b"GET ${T:second} HTTP/1.1\r\nHost: ${H}\r\n\r\n",
    note="a request after the last chunk, which the proxy must see as one of its own")
own("cl-plus", head(POST, HOST, b"Content-Length: +%d" % length(SMUGGLED)) + SMUGGLED)
own("cl-leading-zeros", head(POST, HOST, b"Content-Length: 00%d" % length(SMUGGLED)) + SMUGGLED)
own("cl-list-same", head(POST, HOST, b"Content-Length: %d, %d" % (length(SMUGGLED), length(SMUGGLED))) + SMUGGLED)
own("cl-list-different", head(POST, HOST, b"Content-Length: 0, %d" % length(SMUGGLED)) + SMUGGLED)
own("cl-list-empty-element", head(POST, HOST, b"Content-Length: ,%d" % length(SMUGGLED)) + SMUGGLED)
own("cl-two-lines-same", head(POST, HOST, b"Content-Length: %d" % length(SMUGGLED),
                              b"Content-Length: %d" % length(SMUGGLED)) + SMUGGLED)
own("cl-space-inside", head(POST, HOST, b"Content-Length: " + b" ".join(bytes([d]) for d in b"%d" % length(SMUGGLED))) + SMUGGLED)
own("cl-overflow", head(POST, HOST, b"Content-Length: 18446744073709551678") + SMUGGLED,
    note="2^64 + 62: a parser that wraps reads 62")
own("cl-hex", head(POST, HOST, b"Content-Length: 0x%x" % length(SMUGGLED)) + SMUGGLED)
own("cl-negative", head(POST, HOST, b"Content-Length: -1") + SMUGGLED)
own("te-gzip-chunked", head(POST, HOST, b"Transfer-Encoding: gzip, chunked") + b"0\r\n\r\n")
own("te-chunked-twice-one-line", head(POST, HOST, b"Transfer-Encoding: chunked, chunked") + b"0\r\n\r\n")
own("te-chunked-upper-case", head(POST, HOST, b"Transfer-Encoding: CHUNKED") + b"0\r\n\r\n" + SMUGGLED,
    note="the proxy reads the coding case-insensitively; so must the origin, or the request after the body is hidden")
own("te-identity-chunked", head(POST, HOST, b"Transfer-Encoding: identity, chunked") + b"0\r\n\r\n")
own("te-chunked-parameter", head(POST, HOST, b"Transfer-Encoding: chunked;q=1") + b"0\r\n\r\n")
own("te-empty", head(POST, HOST, b"Transfer-Encoding: ") + b"0\r\n\r\n")
own("te-http-1.0", head(b"POST ${T} HTTP/1.0", HOST, TE) + b"0\r\n\r\n" + SMUGGLED)
own("te-and-cl-http-1.0", head(b"POST ${T} HTTP/1.0", HOST, TE, b"Content-Length: 5") + b"0\r\n\r\n")
own("connection-content-length", head(POST, HOST, b"Content-Length: %d" % length(SMUGGLED),
                                      b"Connection: Content-Length") + SMUGGLED,
    note="a Connection option naming Content-Length: a proxy that drops the field forwards a body the origin reads as a request")
own("connection-transfer-encoding", head(POST, HOST, TE, b"Connection: Transfer-Encoding") + chunk + SMUGGLED
    + b"\r\n0\r\n\r\n")
own("connection-host", head(GET, HOST, b"Connection: Host"))
own("nul-in-target", head(b"GET ${T}\x00 HTTP/1.1", HOST))
own("nul-in-header-name", head(GET, HOST, b"X\x00Y: z"))
own("nul-in-te-value", head(POST, HOST, b"Transfer-Encoding: chunked\x00") + b"0\r\n\r\n" + SMUGGLED)
own("obs-fold-content-length", head(POST, HOST, b"Content-Length:", b" %d" % length(SMUGGLED)) + SMUGGLED)
own("obs-fold-transfer-encoding", head(POST, HOST, b"Transfer-Encoding: gzip", b" ,chunked") + b"0\r\n\r\n")
own("bare-cr-line-end", b"GET ${T} HTTP/1.1\rHost: ${H}\r\n\r\n")
own("bare-lf-head", b"POST ${T} HTTP/1.1\nHost: ${H}\nContent-Length: %d\n\n" % length(SMUGGLED) + SMUGGLED)
own("absolute-form-fragment", head(b"GET ${S}${P}#fragment HTTP/1.1", HOST))
own("absolute-form-userinfo", head(b"GET http://user@${H}${P} HTTP/1.1", HOST))
own("absolute-form-upper-case-scheme", head(b"GET HTTP://${H}${P} HTTP/1.1", HOST))
own("absolute-form-other-host", head(b"GET ${S}${P} HTTP/1.1", b"Host: elsewhere.smug.test"))
own("host-twice", head(GET, HOST, b"Host: elsewhere.smug.test"))
own("host-missing-http-1.1", head(GET))
own("host-empty", head(GET, b"Host: "))
own("host-with-space", head(GET, b"Host: a b"))
own("host-at", head(GET, b"Host: elsewhere.smug.test@${H}"))
own("expect-continue", head(POST, HOST, b"Expect: 100-continue", b"Content-Length: %d" % length(SMUGGLED))
    + SMUGGLED)
own("get-with-body", head(GET, HOST, b"Content-Length: %d" % length(SMUGGLED)) + SMUGGLED)
own("head-with-body", head(b"HEAD ${T} HTTP/1.1", HOST, b"Content-Length: %d" % length(SMUGGLED)) + SMUGGLED)
own("options-star", head(b"OPTIONS * HTTP/1.1", HOST))
own("connect-in-tunnel", head(b"CONNECT ${H} HTTP/1.1", HOST, b"Content-Length: %d" % length(SMUGGLED))
    + SMUGGLED)
own("pipelined-three", head(b"GET ${T:one} HTTP/1.1", HOST) + head(b"GET ${T:two} HTTP/1.1", HOST)
    + head(b"GET ${T:three} HTTP/1.1", HOST))

# --- Written out --------------------------------------------------------------------------------

names = [e["name"] for e in entries]
assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]
# Every placeholder is one the test knows.
for e in entries:
    for match in re.findall(r"\$\{([^}]*)\}", e["bytes"]):
        assert match in ("T", "H", "S", "P", "id") or re.fullmatch(r"T:[a-z]+", match), (e["name"], match)

path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus.jsonl")
with open(path, "w", encoding="ascii") as out:
    for e in entries:
        out.write(json.dumps(e, ensure_ascii=True) + "\n")
counts = {}
for e in entries:
    counts[e["source"]] = counts.get(e["source"], 0) + 1
print(path, len(entries), counts)
