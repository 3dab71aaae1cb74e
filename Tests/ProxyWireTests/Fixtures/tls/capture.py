#!/usr/bin/env python3
"""Records the real TLS hello bytes that the TLSHelloScanner tests parse.

How the fixtures were made: `python3 capture.py` (in this folder, OpenSSL 3.0.19 on Debian 12).
For each scenario below it
  1. makes a throwaway self-signed RSA-2048 certificate and key in a temp dir (never committed),
  2. starts `openssl s_server` on 127.0.0.1,
  3. starts a small TCP relay (this script, socket module) on another 127.0.0.1 port,
  4. runs `openssl s_client` against the relay with stdin closed, so it handshakes and quits,
  5. writes the first CAPTURE_LIMIT bytes of each direction to
     `<scenario>-client.bin` (client to server) and `<scenario>-server.bin` (server to client).
`python3 capture.py NAME…` redoes only the named scenarios.
The bytes are whatever OpenSSL sent, so random values, key shares and certificates differ
on every run; the tests assert only what the scenario pins (versions, suites, SNI, ALPN, EMS).

OPENSSL_CONF points at an empty file so Debian's system policy (MinProtocol = TLSv1.2,
SECLEVEL=2) does not silently change what each scenario offers.
"""

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE_LIMIT = 8 * 1024
SNI = "www.example.com"

# name: (extra s_server arguments, extra s_client arguments)
SCENARIOS = {
    # Default offers (TLS 1.2 and 1.3); the server picks TLS 1.3.
    "tls13": (["-alpn", "http/1.1"], ["-alpn", "h2,http/1.1"]),
    "tls12-ecdhe": (
        ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256", "-alpn", "h2"],
        ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256", "-alpn", "h2,http/1.1"],
    ),
    # RSA key exchange: no forward secrecy.
    "tls12-rsa": (
        ["-tls1_2", "-cipher", "AES128-GCM-SHA256", "-alpn", "http/1.1"],
        ["-tls1_2", "-cipher", "AES128-GCM-SHA256", "-alpn", "h2,http/1.1"],
    ),
    # TLS 1.0 needs security level 0 on both sides in OpenSSL 3 (SHA-1 signatures).
    "tls10": (
        ["-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0", "-alpn", "http/1.1"],
        ["-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0", "-alpn", "http/1.1"],
    ),
    # HelloRetryRequest: OpenSSL's client sends a key share only for the first group it lists
    # (X25519); the server accepts only P-256, so it must ask again (RFC 8446 §4.1.4).
    "tls13-hrr": (
        ["-tls1_3", "-groups", "P-256", "-alpn", "h2"],
        ["-tls1_3", "-groups", "X25519:P-256", "-alpn", "h2"],
    ),
    # No common version: the server answers the ClientHello with a protocol_version alert.
    "alert-protocol-version": (["-tls1_2"], ["-tls1_3"]),
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def pump(source, sink, captured):
    """Copies one direction, keeping its first CAPTURE_LIMIT bytes."""
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            if len(captured) < CAPTURE_LIMIT:
                captured.extend(data[: CAPTURE_LIMIT - len(captured)])
            sink.sendall(data)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def relay_once(listener, server_port, client_bytes, server_bytes):
    downstream, _ = listener.accept()
    upstream = socket.create_connection(("127.0.0.1", server_port))
    threads = [
        threading.Thread(target=pump, args=(downstream, upstream, client_bytes)),
        threading.Thread(target=pump, args=(upstream, downstream, server_bytes)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    downstream.close()
    upstream.close()


def capture(name, server_args, client_args, cert, key, env):
    server_port, relay_port = free_port(), free_port()
    # No -naccept: the readiness probe below is a connection of its own; the server is killed
    # once the client is done.
    server = subprocess.Popen(
        ["openssl", "s_server", "-accept", f"127.0.0.1:{server_port}",
         "-cert", cert, "-key", key, "-quiet"] + server_args,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        if not wait_for_port(server_port):
            sys.exit(f"{name}: s_server did not start")

        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", relay_port))
        listener.listen(1)
        client_bytes, server_bytes = bytearray(), bytearray()
        relay = threading.Thread(
            target=relay_once, args=(listener, server_port, client_bytes, server_bytes))
        relay.start()

        result = subprocess.run(
            ["openssl", "s_client", "-connect", f"127.0.0.1:{relay_port}",
             "-servername", SNI] + client_args,
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20, env=env)
        relay.join(timeout=20)
        listener.close()
        summary = [line.strip() for line in result.stdout.splitlines()
                   if "Protocol" in line or "Cipher" in line or "ALPN" in line
                   or "Extended master secret" in line]
        print(f"{name}: client {len(client_bytes)} bytes, server {len(server_bytes)} bytes")
        for line in summary:
            print(f"    {line}")
        for suffix, data in (("client", client_bytes), ("server", server_bytes)):
            with open(os.path.join(HERE, f"{name}-{suffix}.bin"), "wb") as f:
                f.write(bytes(data))
    finally:
        server.kill()
        server.wait()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        empty_conf = os.path.join(tmp, "openssl.cnf")
        open(empty_conf, "w").close()
        env = dict(os.environ, OPENSSL_CONF=empty_conf)
        cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-subj", f"/CN={SNI}", "-keyout", key, "-out", cert],
            check=True, capture_output=True, env=env)
        names = sys.argv[1:] or list(SCENARIOS)
        for name in names:
            server_args, client_args = SCENARIOS[name]
            capture(name, server_args, client_args, cert, key, env)


if __name__ == "__main__":
    main()
