#!/usr/bin/env python3
"""The smuggling corpus's client: sends each job's bytes through the proxy and reads what comes back.

    client.py JOBS_FILE RESULTS_FILE PROXY_PORT CA_FILE WORKERS

JOBS_FILE is a JSON array of jobs: {"id", "connect": "host:port" or null, "writes": [...]}, each
write a string whose code points are bytes (latin-1). A job with "connect" is a device in intercept
mode: CONNECT, then TLS trusting CA_FILE, each write one TLS record. Without, the writes go straight
to the proxy's socket (plain http://), each its own send() with TCP_NODELAY. Then the job reads
until the proxy ends the connection (the last request of every job asks for Connection: close).

RESULTS_FILE gets a JSON array: {"id", "client_port", "end", "received"} per job, "received" being
the first 2,000 bytes the proxy sent back (latin-1), "end" how the connection ended: "eof", "reset",
"timeout" (15 s without a byte), or "error: ...".
"""

import concurrent.futures
import json
import socket
import ssl
import sys


def run(job, proxy_port, ca_file):
    result = {"id": job["id"], "client_port": 0, "end": "", "received": ""}
    received = b""
    try:
        raw = socket.create_connection(("127.0.0.1", proxy_port), timeout=15)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        result["client_port"] = raw.getsockname()[1]
        stream = raw
        if job["connect"]:
            host = job["connect"].rsplit(":", 1)[0]
            raw.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (job["connect"].encode(), job["connect"].encode()))
            answer = b""
            while b"\r\n\r\n" not in answer:
                chunk = raw.recv(1)
                if not chunk:
                    raise ConnectionError("the proxy closed before answering the CONNECT: %r" % answer)
                answer += chunk
            if not answer.startswith(b"HTTP/1.1 200"):
                raise ConnectionError("CONNECT answered %r" % answer)
            context = ssl.create_default_context(cafile=ca_file)
            # As the review's device and every HTTP client on iOS: ALPN http/1.1, which makes the
            # proxy read the connection as HTTP whatever its first bytes (issue 27, item 3).
            context.set_alpn_protocols(["http/1.1"])
            stream = context.wrap_socket(raw, server_hostname=host)
        try:
            for write in job["writes"]:
                stream.sendall(write.encode("latin-1"))
        except OSError:
            pass  # The proxy refused and closed: what it answered is still to be read.
        while True:
            try:
                chunk = stream.recv(65536)
            except socket.timeout:
                result["end"] = "timeout"
                break
            except ssl.SSLError as error:
                result["end"] = "eof" if "EOF" in str(error) else "error: %s" % error
                break
            except ConnectionResetError:
                result["end"] = "reset"
                break
            if not chunk:
                result["end"] = "eof"
                break
            received += chunk
        stream.close()
    except Exception as error:  # Reported per job: the test fails on it with the job's name.
        result["end"] = "error: %s" % error
    result["received"] = received[:2000].decode("latin-1")
    return result


def main():
    jobs_file, results_file, proxy_port, ca_file, workers = sys.argv[1:6]
    with open(jobs_file, encoding="utf-8") as handle:
        jobs = json.load(handle)
    with concurrent.futures.ThreadPoolExecutor(max_workers=int(workers)) as pool:
        results = list(pool.map(lambda job: run(job, int(proxy_port), ca_file), jobs))
    with open(results_file, "w", encoding="ascii") as handle:
        json.dump(results, handle, ensure_ascii=True)


main()
