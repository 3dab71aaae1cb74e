#!/usr/bin/env python3
"""bench/h2-bench/h2.py: HTTP/2 through atsproxy's intercept mode, against mitmdump and direct.

Python standard library only; h2load (nghttp2-client) is the load client, socat the CONNECT
forwarder in front of the proxies (h2load speaks no proxy protocol), mitmdump is run as a program
(MITMDUMP, `make bench-h2` installs it into its own virtual environment). Reuses
bench/benchlib/benchlib.py (the run's set-up: checks, certificates, nginx, atsproxy, mitmdump,
process groups; /proc readers, the thread pool, the CONNECT client, the tables' shared parts).
Everything runs on 127.0.0.1 and is stopped on exit, on failure and on Ctrl-C. See README.md.

Paths, all to the same nginx (TLS, `listen ... ssl http2`, a leaf for *.good.test from a test root):
  atsproxy    h2load -> socat (CONNECT) -> atsproxy --inspect intercept -> nginx
  mitmdump    h2load -> socat (CONNECT) -> mitmdump (HTTP/2 on, its default) -> nginx
  direct      h2load -> nginx
  direct-fwd  h2load -> socat (a plain TCP forward) -> nginx: what the forwarder alone costs
h2load is given https://h2.good.test:<nginx port>/... and --connect-to 127.0.0.1:<forwarder port>,
so the SNI and :authority are the real name; it verifies no certificate.

Environment (all optional):
  ATSPROXY, ATSPROXYCTL  the binaries (default .build/release/ of this checkout)
  MITMDUMP      mitmdump (default: .build/bench-venv/bin/mitmdump, then PATH); missing: SKIP
  CONNS         new connections per round of phase 1, one stream each, all at once (200; mitmdump half)
  STREAMS       streams per round of phase 2, 10 connections x 10 concurrent (20000; mitmdump 1/40)
  ROUNDS        rounds of phases 1 and 2 per path, interleaved (3; the median round is reported)
  SIZE_MIB      bulk download size, one stream (256; mitmdump gets a file of 1/8); REPS downloads per path (3)
  IDLE          idle h2 connections held per proxy (500)
  THREADS       atsproxy --threads (default the number of cores)
  DAEMON_FLAGS  extra atsproxy flags, for experiments (e.g. "--web-listen off")
  KEEP=1        keep the scratch directory
  HOLD=1        start everything, print the h2load command lines, PIDs and ports, measure nothing, and
                wait for Ctrl-C or SIGTERM (for profiling by hand)
"""

import os
import re
import signal
import ssl
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(TOP, "bench", "benchlib"))
import benchlib  # noqa: E402
from benchlib import Failure  # noqa: E402

CONNS = int(os.environ.get("CONNS", "200"))
STREAMS = int(os.environ.get("STREAMS", "20000"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
SIZE_MIB = int(os.environ.get("SIZE_MIB", "256"))
REPS = int(os.environ.get("REPS", "3"))
IDLE = int(os.environ.get("IDLE", "500"))
THREADS = os.environ.get("THREADS", str(os.cpu_count() or 2))
DAEMON_FLAGS = os.environ.get("DAEMON_FLAGS", "").split()
HOLD = os.environ.get("HOLD") == "1"
TOTAL_LIMIT_S = 600
H2LOAD_TIMEOUT_S = 120

DOMAIN = benchlib.DOMAIN  # good.test: nginx's leaf is for *.good.test
NAME = f"h2.{DOMAIN}"
CLIENTS, MAX_STREAMS = 10, 10  # phase 2: 100 concurrent streams on 10 connections
GOALS = {"conn_ms": 1.0, "stream_ms": 0.05, "rps_x_mitm": 10.0, "kib": 64.0, "bulk_x_mitm": 2.0}


def say(message):
    print(f"h2-bench: {message}", file=sys.stderr, flush=True)


class Path:
    """One way from h2load to nginx: the port h2load connects to, and the proxy process (None: direct)."""

    def __init__(self, name, port, process=None, note="", server_pid=None):
        self.name, self.port, self.process, self.note = name, port, process, note
        # direct: nginx's own process tree, whose CPU is the floor a proxy's is read against
        self.server_pid = server_pid

    @property
    def pid(self):
        return self.process.pid if self.process else None

    def alive(self, phase):
        if self.process and self.process.poll() is not None:
            raise Failure(f"{self.name} exited ({self.process.returncode}) during {phase}")


# --- set-up ---------------------------------------------------------------------------------------

def mitm_mib():
    """mitmdump's bulk download: an eighth of SIZE_MIB (it moves ~15 MiB/s; its set-up is ~20 ms)."""
    return max(1, SIZE_MIB // 8)


def start_nginx(work, processes):
    """nginx with HTTP/2 (and HTTP/1.1) over TLS 1.2/1.3, /small (1 KiB) and /big (SIZE_MIB, sparse),
    1,000,000 requests a connection (nginx's default of 1000 would end h2 connections mid-run).
    Returns its port."""
    www = benchlib.make_www(work, pages=[("small", "x" * 1024)], sparse=[("big", SIZE_MIB), ("big-mitm", mitm_mib())])
    return benchlib.start_nginx(processes, work, www, keepalive_requests=1000000, http2=True)


def start_atsproxy(work, processes, hosts):
    """atsproxy in intercept mode as bench-intercept starts it, with its live view on a port of its
    own and DAEMON_FLAGS; returns its Proxy, whose note says all that."""
    proxy = benchlib.start_atsproxy(work, processes, "atsproxy", hosts, intercept=True, threads=THREADS, flags=[
        "--verdict-ttl", "3600", "--web-listen", f"127.0.0.1:{benchlib.free_port()}", *DAEMON_FLAGS])
    extra = f", {' '.join(DAEMON_FLAGS)}" if DAEMON_FLAGS else ""
    proxy.note += f", the log to a file, the live view on a port of its own{extra}"
    return proxy


def start_forwarder(work, processes, label, nginx_port, proxy_port=None):
    """socat on a free port: each connection forked to a child that CONNECTs through the proxy at
    proxy_port to NAME:nginx_port (or, without a proxy, connects to nginx itself) and copies both
    ways, 128 KiB at a time, TCP_NODELAY on both sides."""
    port = benchlib.free_port()
    listen = f"TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr,backlog=4096,nodelay"
    if proxy_port:
        target = f"PROXY:127.0.0.1:{NAME}:{nginx_port},proxyport={proxy_port},nodelay"
    else:
        target = f"TCP:127.0.0.1:{nginx_port},nodelay"
    name = f"socat-{label}"
    process = processes.start(name, ["socat", "-b", "131072", listen, target],
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, f"{name}.err"), "w"))
    wait_listening(port, name, process, work)
    return port


def wait_listening(port, name, process, work, seconds=15):
    """Until 127.0.0.1:port is in LISTEN state (/proc/net/tcp), without connecting: a connection to
    socat would be forwarded, and the proxy would log a CONNECT that failed."""
    entry = f"0100007F:{port:04X}"
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise Failure(f"{name} exited at start-up: {benchlib.tail(os.path.join(work, name + '.err'))}")
        with open("/proc/net/tcp") as f:
            if any(line.split()[1] == entry and line.split()[3] == "0A" for line in list(f)[1:]):
                return
        time.sleep(0.05)
    raise Failure(f"{name} did not listen on 127.0.0.1:{port} within {seconds} s")


# --- h2load ---------------------------------------------------------------------------------------

def h2load(path, nginx_port, resource, requests, clients, streams, h1=False):
    """One h2load run: a dict with wall seconds, requests/s, succeeded, 2xx, protocol. h1: --h1
    (HTTP/1.1 on every connection), to compare with."""
    argv = ["h2load", "-n", str(requests), "-c", str(clients), "-m", str(streams), "-t", "1"] + (["--h1"] if h1 else []) + [
            f"--connect-to=127.0.0.1:{path.port}", f"https://{NAME}:{nginx_port}{resource}"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=H2LOAD_TIMEOUT_S)
    text = out.stdout
    finished = re.search(r"finished in ([\d.]+)(ms|s), ([\d.]+) req/s", text)
    done = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored", text)
    codes = re.search(r"status codes: (\d+) 2xx", text)
    proto = re.search(r"Application protocol: (\S+)", text)
    if out.returncode != 0 or not finished or not done:
        raise Failure(f"h2load through {path.name} failed ({out.returncode}): {(text + out.stderr).strip()[-600:]}")
    wall = float(finished.group(1)) / (1000 if finished.group(2) == "ms" else 1)
    row = {"wall": wall, "rps": float(finished.group(3)), "succeeded": int(done.group(4)),
           "ok": int(codes.group(1)) if codes else 0, "proto": proto.group(1) if proto else "?"}
    if row["ok"] != requests:
        raise Failure(f"h2load through {path.name}: {row['ok']} of {requests} requests answered 2xx "
                      f"({done.group(0)}); {out.stderr.strip()[-300:]}")
    if row["proto"] != ("http/1.1" if h1 else "h2"):
        raise Failure(f"h2load through {path.name} negotiated {row['proto']}, not {'http/1.1' if h1 else 'h2'}")
    return row


def proxy_cpu(path, run):
    """run() with the proxy's utime+stime (its process tree; for direct, nginx's) read around it:
    (result, user s, sys s)."""
    pid = path.pid or path.server_pid
    time.sleep(0.3)
    before = benchlib.cpu_seconds(pid)
    result = run()
    time.sleep(0.3)  # the proxy finishes closing what the client closed
    after = benchlib.cpu_seconds(pid)
    path.alive("a measurement")
    return result, after[0] - before[0], after[1] - before[1]


# --- an idle h2 connection, by hand ----------------------------------------------------------------

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, SETTINGS, GOAWAY, RST_STREAM = 0, 1, 4, 7, 3
END_STREAM, ACK, PADDED, PRIORITY = 0x1, 0x1, 0x8, 0x20


def frame(kind, flags, stream, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def request_block(authority, path):
    """HPACK: :method GET, :scheme https (static table), :path and :authority as literals without
    indexing on the static names (no Huffman)."""
    def literal(index, value):
        v = value.encode()
        return bytes([index]) + bytes([len(v)]) + v
    return b"\x82\x87" + literal(4, path) + literal(1, authority)


def read_frame(tls, buffer):
    while len(buffer) < 9 or len(buffer) < 9 + int.from_bytes(buffer[:3], "big"):
        chunk = tls.recv(65536)
        if not chunk:
            raise ConnectionError("closed in the HTTP/2 exchange")
        buffer += chunk
    length = int.from_bytes(buffer[:3], "big")
    kind, flags, stream = buffer[3], buffer[4], int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
    payload = bytes(buffer[9:9 + length])
    del buffer[:9 + length]
    return kind, flags, stream, payload


def open_idle_h2(proxy_address, nginx_port, context):
    """A new connection to the proxy: CONNECT, TLS with ALPN h2, the client preface and SETTINGS,
    one GET /small on stream 1 read to its end (status 200, indexed), the server's SETTINGS acked.
    Returns the open TLS socket, left idle."""
    sock = benchlib.connect_tunnel(proxy_address, (NAME, nginx_port), timeout=60)
    tls = context.wrap_socket(sock, server_hostname=NAME)
    try:
        if tls.selected_alpn_protocol() != "h2":
            raise ConnectionError(f"ALPN {tls.selected_alpn_protocol()!r}, not h2")
        tls.sendall(PREFACE + frame(SETTINGS, 0, 0) +
                    frame(HEADERS, END_STREAM | 0x4, 1, request_block(f"{NAME}:{nginx_port}", "/small")))
        buffer, status_ok, ended = bytearray(), False, False
        while not ended:
            kind, flags, stream, payload = read_frame(tls, buffer)
            if kind == SETTINGS and not flags & ACK:
                tls.sendall(frame(SETTINGS, ACK, 0))
            elif kind == HEADERS and stream == 1:
                block = payload
                if flags & PADDED:
                    block = block[1:len(block) - block[0]]
                if flags & PRIORITY:
                    block = block[5:]
                status_ok = status_ok or block[:1] == b"\x88"  # :status 200, indexed
                ended = bool(flags & END_STREAM)
            elif kind == DATA and stream == 1:
                ended = bool(flags & END_STREAM)
            elif kind in (GOAWAY, RST_STREAM):
                raise ConnectionError(f"frame type {kind} (payload {payload[:16].hex()})")
        if not status_ok:
            raise ConnectionError("the answer's :status was not an indexed 200")
    except BaseException:
        tls.close()
        raise
    return tls


# --- phases ---------------------------------------------------------------------------------------

def phase_connections(proxies, direct, nginx_port):
    """CPU per new connection with its first stream: CONNS h2load clients at once, one GET each.
    atsproxy also with h2load --h1 (HTTP/1.1 through the same forwarder and interception): the
    difference is the HTTP/2 relay's own share. And nginx's own CPU for the same connections made
    to it directly: one TLS handshake (the server's side) and the GET, where a proxy makes two
    handshakes and relays."""
    runs = [(p, False) for p in proxies] + [(direct, False)]
    runs.insert(1, (proxies[0], True))
    label = {(p.name, h1): f"{p.name}-h1" if h1 else p.name for p, h1 in runs}
    rounds = {label[(p.name, h1)]: [] for p, h1 in runs}
    for p, h1 in runs:  # warm-up: leaf cache, verdict, the upstream session to resume, page-ins
        h2load(p, nginx_port, "/small", 50, 50, 1, h1=h1)
    for r in range(ROUNDS):
        for p, h1 in runs:
            n = CONNS // 2 if p.name == "mitmdump" else CONNS
            row, user, system = proxy_cpu(p, lambda: h2load(p, nginx_port, "/small", n, n, 1, h1=h1))
            row.update(n=n, ms=(user + system) * 1000 / n, user_ms=user * 1000 / n, sys_ms=system * 1000 / n)
            rounds[label[(p.name, h1)]].append(row)
            say(f"  {label[(p.name, h1)]} round {r + 1}: {row['ms']:.3f} ms/connection ({n} in {row['wall']:.2f} s)")
    return rounds


def mitm_streams():
    return max(4 * CLIENTS, STREAMS // 40)


def phase_streams(paths, nginx_port, conn_ms):
    """Streams per second and CPU per stream: STREAMS GETs of /small on 10 connections, 10 at a time on each."""
    rounds = {p.name: [] for p in paths}
    for p in paths:
        h2load(p, nginx_port, "/small", 200 if p.name == "mitmdump" else 1000, CLIENTS, MAX_STREAMS)
    for r in range(ROUNDS):
        for p in paths:
            n = mitm_streams() if p.name == "mitmdump" else STREAMS
            run = lambda: h2load(p, nginx_port, "/small", n, CLIENTS, MAX_STREAMS)  # noqa: E731
            if p.pid or p.server_pid:
                row, user, system = proxy_cpu(p, run)
                # the 10 connections' own cost (phase 1's figure) off, the rest over the other streams
                row.update(ms=(user + system) * 1000 / n,
                           extra_ms=((user + system) * 1000 - CLIENTS * conn_ms[p.name]) / (n - CLIENTS))
            else:
                row = run()
            row["n"] = n
            rounds[p.name].append(row)
            cpu = f", {row['extra_ms']:.4f} ms CPU per extra stream" if "extra_ms" in row else ""
            say(f"  {p.name} round {r + 1}: {row['rps']:.0f} streams/s ({n} in {row['wall']:.2f} s){cpu}")
    return rounds


def phase_bulk(paths, nginx_port):
    """One GET /big on one connection: MiB/s (h2load's wall time) and the proxy's CPU per GiB.
    mitmdump gets /big-mitm, an eighth of the size, to keep the run short."""
    speeds = {p.name: [] for p in paths}
    cpu = {p.name: [] for p in paths if p.pid or p.server_pid}
    for rep in range(REPS):
        for p in paths:
            resource, mib = ("/big-mitm", mitm_mib()) if p.name == "mitmdump" else ("/big", SIZE_MIB)
            run = lambda: h2load(p, nginx_port, resource, 1, 1, 1)  # noqa: E731
            if p.pid or p.server_pid:
                row, user, system = proxy_cpu(p, run)
                cpu[p.name].append((user + system) / (mib / 1024))
            else:
                row = run()
            speeds[p.name].append(mib / row["wall"])
            say(f"  {p.name} run {rep + 1}: {mib / row['wall']:.0f} MiB/s")
    return speeds, cpu


def phase_idle(path, proxy_port, nginx_port):
    """IDLE connections straight to the proxy (no forwarder), each h2 with one GET, held: RSS growth."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # h2load verifies nothing either; every path is known to be intercepted
    context.set_alpn_protocols(["h2"])
    return benchlib.hold_idle(path, IDLE, lambda: open_idle_h2(("127.0.0.1", proxy_port), nginx_port, context),
                              "idle h2 connections", say)


# --- the run --------------------------------------------------------------------------------------

def main():
    benchlib.limit_run(TOTAL_LIMIT_S)
    benchlib.require_tools("bench-h2", {"openssl": "Debian package openssl", "nginx": "Debian package nginx",
                                        "h2load": "Debian package nghttp2-client", "socat": "Debian package socat"})
    benchlib.require_binaries()
    benchlib.raise_open_files(4 * max(IDLE, CONNS) + 1024, f"IDLE={IDLE} / CONNS={CONNS}")
    started = time.monotonic()
    lines = benchlib.in_scratch("h2-bench", say, run)
    print("\n".join(lines))
    print(f"\n(run took {time.monotonic() - started:.0f} s; a benchmark, not a test)")


def run(work, processes):
    say(f"scratch directory {work}")
    benchlib.make_certificates(work)
    nginx_port = start_nginx(work, processes)
    hosts = os.path.join(work, "hosts")
    with open(hosts, "w") as f:
        f.write(f"127.0.0.1 {NAME}\n")
    benchlib.make_atsproxy_ca(work)
    skipped = {}
    daemon = start_atsproxy(work, processes, hosts)
    ats = Path("atsproxy", start_forwarder(work, processes, "atsproxy", nginx_port, daemon.port), daemon.process, daemon.note)
    proxies = [ats]
    ports = {"atsproxy": daemon.port}
    mitm, why = benchlib.start_mitmdump(work, processes, http2=True)  # HTTP/2 on, its default
    if mitm:
        proxies.append(Path("mitmdump", start_forwarder(work, processes, "mitmdump", nginx_port, mitm.port), mitm.process, mitm.note))
        ports["mitmdump"] = mitm.port
    else:
        skipped["mitmdump"] = why
    with open(os.path.join(work, "nginx", "nginx.pid")) as f:
        nginx_pid = int(f.read().strip())
    direct = Path("direct", nginx_port, note="h2load to nginx (CPU figures: nginx's own, its one worker)",
                  server_pid=nginx_pid)
    direct_fwd = Path("direct-fwd", start_forwarder(work, processes, "direct", nginx_port), note="h2load to socat to nginx (TCP)")
    benchlib.first_requests(proxies, lambda p: h2load(p, nginx_port, "/small", 1, 1, 1), skipped, work, say)
    say("proxies: " + ", ".join(f"{p.name} :{ports[p.name]} (pid {p.pid}, forwarder :{p.port})" for p in proxies)
        + f"; nginx :{nginx_port}, plain forwarder :{direct_fwd.port}")
    by = {p.name: p for p in proxies}
    paths = proxies + [direct, direct_fwd]
    if HOLD:
        signal.alarm(0)
        for p in paths:
            pid = f" (proxy pid {p.pid}, port {ports[p.name]})" if p.pid else ""
            print(f"{p.name:11} h2load -c 10 -m 10 -n 20000 --connect-to=127.0.0.1:{p.port} https://{NAME}:{nginx_port}/small{pid}",
                  flush=True)
        print(f"scratch directory {work}; Ctrl-C stops everything", flush=True)
        signal.pause()

    say(f"1/4 new connections: {ROUNDS} rounds x {CONNS} connections at once, one GET /small each (mitmdump {CONNS // 2}), "
        "atsproxy also with HTTP/1.1")
    conns = phase_connections(proxies, direct, nginx_port)
    mid_conn = {n: sorted(r, key=lambda x: x["ms"])[len(r) // 2] for n, r in conns.items()}
    conn_ms = {n: mid_conn[n]["ms"] for n in mid_conn}
    say(f"2/4 streams: {ROUNDS} rounds x {STREAMS} GET /small on {CLIENTS} connections x {MAX_STREAMS} concurrent "
        f"(mitmdump {mitm_streams()})")
    streams = phase_streams(paths, nginx_port, conn_ms)
    say(f"3/4 bulk: {REPS} x {SIZE_MIB} MiB on one stream, every path, interleaved")
    speeds, bulk_cpu = phase_bulk(paths, nginx_port)
    say(f"4/4 memory: {IDLE} idle h2 connections per proxy, each after one GET")
    idle = {p.name: phase_idle(p, ports[p.name], nginx_port) for p in proxies}

    log_path = os.path.join(work, "atsproxy.log")
    log_text = open(log_path, errors="replace").read()
    h2_lines = log_text.count('"http_version":"HTTP/2"')
    banner = ("atsproxy live view", "atsproxy listening", "Onboarding:")
    err_lines = [l.rstrip() for l in open(os.path.join(work, "atsproxy.err"), errors="replace")
                 if l.strip() and not l.startswith(banner)]
    err_text = " | ".join(err_lines[-5:]) if err_lines else "none beyond the start-up lines"

    # --- the table ---
    out = []
    h2load_version = subprocess.run(["h2load", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    out.append("")
    out.append(f"h2-bench: {os.cpu_count()} cores ({benchlib.cpu_model()}); nginx {nginx_version()} with HTTP/2 over TLS 1.3, a P-256 leaf "
               f"for *.{DOMAIN} from an RSA test root; {h2load_version}, -t 1, no certificate checks; socat as the "
               f"CONNECT forwarder in front of each proxy")
    for p in proxies + [direct, direct_fwd]:
        out.append(f"   {p.name:11} {p.note}")
    for name, why in skipped.items():
        out.append(f"   {name:11} SKIP: {why}")
    peer = "mitmdump" if "mitmdump" in by else None

    def ratio(a, b):
        return f"{a / b:6.2f}x" if b else f"{'-':>7}"

    out.append("")
    out.append(f"1. Proxy CPU per new h2 connection with its first stream ({ROUNDS} rounds; h2load -c N -n N -m 1: N connections "
               f"at once, each CONNECT + TLS + h2 + one GET /small, N = {CONNS} (mitmdump {CONNS // 2}); utime+stime of the "
               f"proxy's process tree / N; median round)")
    out.append(f"   {'':11} {'ms/conn':>8} {'user':>6} {'sys':>6} {'conn/s':>7} {'ats/it':>7}  rounds ms/conn")
    for name in conns:
        r = mid_conn[name]
        rel = ratio(conn_ms["atsproxy"], conn_ms[name]) if name != "atsproxy" else f"{'':7}"
        out.append(f"   {name:11} {r['ms']:8.3f} {r['user_ms']:6.3f} {r['sys_ms']:6.3f} {r['n'] / r['wall']:7.0f} {rel}  "
                   + " ".join(f"{x['ms']:.3f}" for x in conns[name]))
    out.append("   (atsproxy-h1: h2load --h1, the same connections with HTTP/1.1 through the same forwarder and interception;"
               " the HTTP/2 relay's own share is the difference. direct: nginx's own CPU for the same connections made to it,"
               " one TLS handshake and the GET: a proxy makes two handshakes, one of them a server's as nginx's is)")
    out.append("")
    mid_str = {n: sorted(r, key=lambda x: x["rps"])[len(r) // 2] for n, r in streams.items()}
    out.append(f"2. Streams per second, {CLIENTS} connections x {MAX_STREAMS} concurrent streams (h2load -c {CLIENTS} -m {MAX_STREAMS}, "
               f"{STREAMS} GET /small, mitmdump {mitm_streams()}; {ROUNDS} rounds interleaved, median by streams/s), and the proxy's "
               f"CPU per stream: all of it / streams, and per extra stream = (all - {CLIENTS} x phase 1's ms/conn) / (streams - {CLIENTS})")
    out.append(f"   {'':11} {'streams/s':>9} {'vs direct':>9} {'ats/it':>7} {'ms/stream':>9} {'ms/extra':>9}  rounds streams/s")
    for p in paths:
        r = mid_str[p.name]
        rel = ratio(mid_str["atsproxy"]["rps"], r["rps"]) if p is not ats else f"{'':7}"
        cpu = f"{r['ms']:9.4f} {r['extra_ms']:9.4f}" if "extra_ms" in r else f"{'':9} {'':9}"
        out.append(f"   {p.name:11} {r['rps']:9.0f} {r['rps'] / mid_str['direct']['rps']:8.2f}x {rel} {cpu}  "
                   + " ".join(f"{x['rps']:.0f}" for x in streams[p.name]))
    out.append("")
    med = {n: statistics.median(v) for n, v in speeds.items()}
    out.append(f"3. Bulk throughput on one stream, GET of {SIZE_MIB} MiB (mitmdump {mitm_mib()} MiB) (h2load -c 1 -n 1, windows 2^30-1; MiB/s = 2^20 bytes "
               f"/ h2load's wall time incl. the connection; {REPS} runs interleaved, median) and the proxy's CPU per GiB")
    out.append(f"   {'':11} {'MiB/s':>7} {'vs direct':>9} {'ats/it':>7} {'CPU s/GiB':>9}  runs MiB/s")
    for p in paths:
        c = f"{statistics.median(bulk_cpu[p.name]):9.2f}" if p.name in bulk_cpu else f"{'':9}"
        rel = ratio(med["atsproxy"], med[p.name]) if p is not ats else f"{'':7}"
        out.append(f"   {p.name:11} {med[p.name]:7.0f} {med[p.name] / med['direct']:8.2f}x {rel} {c}  "
                   + " ".join(f"{v:.0f}" for v in speeds[p.name]))
    out.append("")
    out.append(f"4. Resident memory per idle h2 connection ({IDLE} held, straight to the proxy without the forwarder, 20 opened "
               f"at a time: CONNECT + TLS (ALPN h2) + preface + SETTINGS + one GET /small read to its end; VmRSS growth of "
               f"the proxy's process tree 2 s later / {IDLE})")
    out += benchlib.idle_lines(idle, 11)
    out.append("")
    out.append(f"   atsproxy log: {h2_lines} request lines with http_version HTTP/2; stderr: {err_text}")

    # --- goals ---
    rows = []
    a = conn_ms["atsproxy"]
    peer_txt = f"; mitmdump {conn_ms[peer]:.3f} ms ({a / conn_ms[peer]:.2f}x)" if peer else ""
    peer_txt += f"; HTTP/1.1 the same way {conn_ms['atsproxy-h1']:.3f} ms; nginx itself {conn_ms['direct']:.3f} ms"
    rows.append(("1. CPU per new h2 connection + first stream", f"{a:.3f} ms{peer_txt}", f"<= {GOALS['conn_ms']} ms",
                 "PASS" if a <= GOALS["conn_ms"] else "FAIL"))
    e = mid_str["atsproxy"]["extra_ms"]
    peer_txt = f"; mitmdump {mid_str[peer]['extra_ms']:.4f} ms" if peer else ""
    peer_txt += f"; nginx itself {mid_str['direct']['extra_ms']:.4f} ms"
    rows.append(("2. CPU per extra stream", f"{e:.4f} ms{peer_txt}", f"<= {GOALS['stream_ms']} ms",
                 "PASS" if e <= GOALS["stream_ms"] else "FAIL"))
    rows.append(times_mitmdump("3. streams/s, 100 concurrent on 10 connections", {n: r["rps"] for n, r in mid_str.items()},
                               "/s", 1, GOALS["rps_x_mitm"], skipped.get("mitmdump")))
    k = idle["atsproxy"]["kib"]
    peer_txt = f"; mitmdump {idle[peer]['kib']:.1f}" if peer else ""
    rows.append(("4. memory per idle h2 connection", f"{k:.1f} KiB{peer_txt}", f"<= {GOALS['kib']:.0f} KiB",
                 "PASS" if k <= GOALS["kib"] and idle["atsproxy"]["alive"] == IDLE else "FAIL"))
    rows.append(times_mitmdump("5. bulk throughput on one stream", med, " MiB/s", 2, GOALS["bulk_x_mitm"], skipped.get("mitmdump")))
    out.append("")
    out.append("Goals for atsproxy relaying HTTP/2 in intercept mode:")
    out += benchlib.goal_lines(rows, 47, 16)
    out.append(benchlib.goal_count(rows))
    return out


def times_mitmdump(label, figures, unit, digits, goal, why):
    """A goal row: atsproxy's figure at least `goal` times mitmdump's. `figures` has one per path
    (atsproxy, direct, direct-fwd, and mitmdump unless it was skipped, for `why`), each printed
    with `unit` after it; the ratio has `digits` decimals. SKIP without mitmdump."""
    ours, goal_text = figures["atsproxy"], f">= {goal:.0f}x mitmdump"
    if "mitmdump" not in figures:
        return label, f"{ours:.0f}{unit}; mitmdump: {why}", goal_text, "SKIP"
    x = ours / figures["mitmdump"]
    return (label, f"{ours:.0f}{unit} = {x:.{digits}f}x mitmdump ({figures['mitmdump']:.0f}); direct {figures['direct']:.0f}, "
            f"direct-fwd {figures['direct-fwd']:.0f}", goal_text, "PASS" if x >= goal else "FAIL")


def nginx_version():
    text = subprocess.run(["nginx", "-v"], capture_output=True, text=True, timeout=30).stderr
    return text.strip().rsplit("/", 1)[-1] if "/" in text else "?"


if __name__ == "__main__":
    benchlib.run_main(main, say)
