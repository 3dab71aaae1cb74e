#!/usr/bin/env python3
"""bench/latency-bench/latency.py: time to first byte through the proxies when the server is far away.

Python standard library only; mitmdump is run as a program. The server is nginx on 127.0.0.1 behind
relay.py, which delays every byte DELAY_MS each way (and emulates the TCP handshake's round trip), so
a round trip to "the server" costs 2 x DELAY_MS. Each sample is a client on 127.0.0.1 making a new
TCP connection (to the relay directly, or to a proxy and CONNECT name:relayport), a TLS handshake,
and GET /small; its time to the response's first byte is compared with the direct path's. Two
clients take the samples: curl, as the issue measured, and a Python ssl socket. Reuses
bench/benchlib/benchlib.py (the run's set-up: checks, certificates, nginx, process groups, atsproxy
in both modes, mitmdump, squid).
Everything is stopped on exit, on failure and on Ctrl-C. See README.md.

Environment (all optional):
  ATSPROXY, ATSPROXYCTL  the binaries (default .build/release/ of this checkout)
  MITMDUMP      mitmdump (default: .build/bench-venv/bin/mitmdump, then PATH); missing: SKIP
  DELAY_MS      one-way delay of the relay (25: a 50 ms round trip)
  CONNECT_RTT   1 (default): a new TCP connection costs a round trip before its first bytes arrive;
                0: it costs nothing (the first bytes arrive after one delay, like any others)
  SAMPLES       samples per case and client, interleaved across the cases (7)
  CLIENTS       the clients, the first one's figures judged against the goals: "curl python" (default),
                "curl", "python". curl: curl 7.88's time_starttransfer (a new process each sample);
                python: an ssl socket in this process
  THREADS       atsproxy --threads (default the number of cores)
  KEEP=1        keep the scratch directory (configs, logs, the relay's events)
"""

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ left in the checkout
sys.path.insert(0, os.path.join(TOP, "bench", "benchlib"))
import benchlib  # noqa: E402
from benchlib import Failure  # noqa: E402

DELAY_MS = float(os.environ.get("DELAY_MS", "25"))
CONNECT_RTT = os.environ.get("CONNECT_RTT", "1") != "0"
SAMPLES = int(os.environ.get("SAMPLES", "7"))
CLIENTS = os.environ.get("CLIENTS", "curl python").split()
THREADS = os.environ.get("THREADS", str(os.cpu_count() or 2))
TOTAL_LIMIT_S = 600  # the whole run, whatever happens
SAMPLE_TIMEOUT_S = 20
SMALL_BYTES = 1024  # /small's body
DOMAIN = benchlib.DOMAIN  # good.test: nginx's leaf is for *.good.test

# Goals: time to first byte / direct's, medians.
# (path, case, the most its median may be as a ratio to direct's, or None; the most round trips it may
# add, or None). atsproxy-tun is the default, --tunnel-start connect: the device's ClientHello goes to
# the server while the probe runs, + 0 round trips. atsproxy-tunv is --tunnel-start verdict: its first
# connection waits for the verdict before the device's handshake starts, so it costs one round trip
# and the probe's own handshake work more than direct; shown beside the default, with no goal of its
# own for a first connection.
GOALS = [("atsproxy-tun", "first", None, 1.0), ("atsproxy-tun", "first", 1.33, None),
         ("atsproxy-tun", "repeat", 1.05, None), ("atsproxy-tunv", "repeat", 1.05, None),
         ("atsproxy-icpt", "first", 1.10, None)]
OURS = ("direct", "atsproxy-tun", "atsproxy-tunv", "atsproxy-icpt")


def say(message):
    print(f"latency-bench: {message}", file=sys.stderr, flush=True)


# --- set-up ---------------------------------------------------------------------------------------

class Path:
    """How a client reaches the server: directly (the relay) or through a proxy. `kind` is the short
    name used in host names (r3-tun.good.test)."""

    def __init__(self, name, kind, address, cafile, via_proxy, note, process=None, log=None):
        self.name, self.kind, self.address, self.cafile = name, kind, address, cafile
        self.via_proxy, self.note, self.process, self.log = via_proxy, note, process, log
        self.context = benchlib.client_context(cafile)

    def alive(self, phase):
        if self.process is not None and self.process.poll() is not None:
            raise Failure(f"{self.name} exited ({self.process.returncode}) during {phase}")


def start_relay(work, processes, target_port):
    argv = [sys.executable, "-B", os.path.join(HERE, "relay.py"), "--target", f"127.0.0.1:{target_port}",
            "--delay-ms", str(DELAY_MS), "--events", os.path.join(work, "relay-events.jsonl")]
    if not CONNECT_RTT:
        argv.append("--no-connect-rtt")
    relay, ready = benchlib.start_announcing(processes, work, "relay", argv, "the relay")
    return relay, ready["port"]


def start_squid(work, processes, hosts):
    """squid as a plain CONNECT proxy (no ssl-bump), resolving through the hosts file."""
    if not shutil.which("squid"):
        return None, "squid not installed (apt-get install squid-openssl)"
    try:
        process, port, version = benchlib.start_squid(work, processes, "squid", hosts)
    except Failure as failure:
        return None, str(failure)
    return (process, port, f"{version}, plain CONNECT (no ssl-bump), its hosts_file, no cache, no access log"), None


# --- the client -----------------------------------------------------------------------------------

def sample_python(path, name, relay_port, work):
    """One new connection (to the relay, or to the proxy + CONNECT name:relayport), TLS with SNI name,
    GET /small, the response read to its end. Returns the times, in seconds from the start, of: TCP
    connected, CONNECT answered (None direct), TLS done, first response byte; and the start on both
    clocks (monotonic, for the relay's events; wall, for the proxy's log)."""
    started_wall, started = time.time(), time.monotonic()
    sock = socket.create_connection(path.address, timeout=SAMPLE_TIMEOUT_S)
    times = {"start": started, "start_wall": started_wall, "tcp": time.monotonic() - started, "connect": None}
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if path.via_proxy:
            benchlib.open_tunnel(sock, (name, relay_port))
            times["connect"] = time.monotonic() - started
        tls = path.context.wrap_socket(sock, server_hostname=name)
        sock = tls
        times["tls"] = time.monotonic() - started
        # Keep-alive, as a browser or an app sends it (and curl): the server does not close after the
        # answer, so nothing but the bytes themselves ends it (a close would flush what a proxy holds).
        tls.sendall(f"GET /small HTTP/1.1\r\nHost: {name}:{relay_port}\r\n\r\n".encode())
        response = tls.recv(65536)
        times["first_byte"] = time.monotonic() - started
        if not response.startswith(b"HTTP/1.1 200"):
            raise ConnectionError(f"GET /small answered {response[:40]!r}")
        while len(response) < SMALL_BYTES or b"\r\n\r\n" not in response or (
                len(response.split(b"\r\n\r\n", 1)[1]) < SMALL_BYTES):  # to its end (Content-Length 1024)
            chunk = tls.recv(65536)
            if not chunk:
                raise ConnectionError("closed before the end of the response")
            response += chunk
        times["end"] = time.monotonic() - started
        return times
    finally:
        sock.close()


def sample_curl(path, name, relay_port, work):
    """sample_python's request made by curl: its own times (time_connect, time_appconnect,
    time_starttransfer, time_total, from its start), and from its trace (--trace-time: wall clock, us)
    its start and when the CONNECT's 200 came."""
    trace = os.path.join(work, "curl-trace.txt")
    argv = ["curl", "-q", "-sS", "--http1.1", "-o", "/dev/null", "--cacert", path.cafile,
            "--max-time", str(SAMPLE_TIMEOUT_S), "--trace-ascii", trace, "--trace-time",
            "-w", "%{http_code} %{time_connect} %{time_appconnect} %{time_starttransfer} %{time_total}"]
    if path.via_proxy:
        argv += ["--proxy", f"http://{path.address[0]}:{path.address[1]}"]
    else:
        argv += ["--resolve", f"{name}:{relay_port}:127.0.0.1"]
    argv.append(f"https://{name}:{relay_port}/small")
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    before_wall, before = time.time(), time.monotonic()
    out = subprocess.run(argv, capture_output=True, text=True, timeout=SAMPLE_TIMEOUT_S + 10, env=env)
    after = time.monotonic()
    if out.returncode != 0:
        raise ConnectionError(f"curl exited {out.returncode}: {out.stderr.strip()}")
    code, tcp, tls, first_byte, total = out.stdout.split()
    if code != "200":
        raise ConnectionError(f"GET /small answered {code}")
    first, connect = None, None  # the trace's first line, seconds into its day; the CONNECT's answer after it
    with open(trace, errors="replace") as f:
        for line in f:
            clock, _, rest = line.partition(" ")
            if len(clock) < 15 or clock[2:3] != ":" or not clock[:2].isdigit():
                continue
            h, m, sec = clock.split(":")
            at = int(h) * 3600 + int(m) * 60 + float(sec)
            if first is None:
                first = at
            if path.via_proxy and connect is None and rest.startswith("<= Recv header"):
                connect = at - first  # the first header received is the CONNECT's answer
    # Where curl started on our clocks. curl 7.88's trace clock is CLOCK_MONOTONIC plus a whole number
    # of seconds (its tvnow() and time(NULL)), so its fraction of a second is the monotonic clock's; a
    # curl whose trace is the wall clock is placed by that instead. Whichever lands between the spawn
    # and the end of the run less curl's own total is taken; else the spawn.
    start = before
    if first is not None:
        local = datetime.fromtimestamp(before_wall)
        day_start = local.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
        as_wall = day_start + first + (86400 if day_start + first < before_wall - 43200 else 0)
        for candidate in (before + (first - before) % 1.0, before + (as_wall - before_wall)):
            if before <= candidate <= after - float(total) + 0.002:
                start = candidate
                break
    return {"start": start, "start_wall": before_wall + (start - before), "tcp": float(tcp), "connect": connect,
            "tls": float(tls), "first_byte": float(first_byte), "end": float(total)}


SAMPLERS = {"curl": sample_curl, "python": sample_python}


# --- the run --------------------------------------------------------------------------------------

CASES = []  # (path name, "first" | "repeat"), in the order of the table


def run(work, processes):
    say(f"scratch directory {work}")
    benchlib.make_certificates(work)
    root = os.path.join(work, "root.pem")
    www = benchlib.make_www(work, pages=[("small", "x" * SMALL_BYTES)])
    nginx_port = benchlib.start_nginx(processes, work, www)
    relay, relay_port = start_relay(work, processes, nginx_port)

    kinds = {"direct": "direct", "atsproxy-tun": "tun", "atsproxy-tunv": "tunv", "atsproxy-icpt": "icpt",
             "squid": "squid", "mitmdump": "mitm"}
    hosts = os.path.join(work, "hosts")
    with open(hosts, "w") as f:
        for kind in kinds.values():
            for client in CLIENTS:
                f.write(f"127.0.0.1 warm-{kind}-{client}.{DOMAIN} "
                        f"{' '.join(f'r{r}-{kind}-{client}.{DOMAIN}' for r in range(SAMPLES))}\n")

    benchlib.make_atsproxy_ca(work)
    paths, skipped = [], {}
    paths.append(Path("direct", "direct", ("127.0.0.1", relay_port), root, False,
                      "the client straight to the relay (no proxy)", relay))
    for name, icpt, extra in (("atsproxy-tun", False, []), ("atsproxy-tunv", False, ["--tunnel-start", "verdict"]),
                              ("atsproxy-icpt", True, [])):
        p = benchlib.start_atsproxy(work, processes, name, hosts, icpt, THREADS, ["--verdict-ttl", "3600", *extra])
        paths.append(Path(name, kinds[name], p.address, p.cafile, True,
                          p.note + "".join(f" {a}" for a in extra) + ", --verdict-ttl 3600",
                          p.process, os.path.join(work, f"{name}.log")))
    squid, why = start_squid(work, processes, hosts)
    if squid:
        process, port, note = squid
        paths.append(Path("squid", "squid", ("127.0.0.1", port), root, True, note, process))
    else:
        skipped["squid"] = why
    if benchlib.MITMDUMP and not os.access(benchlib.MITMDUMP, os.X_OK):
        mitm, why = None, f"no mitmdump at {benchlib.MITMDUMP} (make bench-venv installs it)"
    else:
        try:
            mitm, why = benchlib.start_mitmdump(work, processes)
        except OSError as error:
            mitm, why = None, f"mitmdump could not be started: {error}"
    if mitm:
        paths.append(Path("mitmdump", "mitm", mitm.address, mitm.cafile, True,
                          mitm.note.replace(", stream_large_bodies=1m", ""), mitm.process))
    else:
        skipped["mitmdump"] = why

    for p in list(paths):  # warm-up: first-use page-ins, mitmdump's first certificate; a peer that fails is SKIP
        try:
            for client in CLIENTS:
                SAMPLERS[client](p, f"warm-{p.kind}-{client}.{DOMAIN}", relay_port, work)
        except Exception as error:  # noqa: BLE001
            if p.name in OURS:
                raise Failure(f"the warm-up request through {p.name} failed: {type(error).__name__}: {error}"
                              + (f"; {benchlib.tail(os.path.join(work, p.name + '.err'), 5)}" if p.log else ""))
            skipped[p.name] = f"a request through it failed: {type(error).__name__}: {error}"
            paths.remove(p)
    for name, why in skipped.items():
        say(f"SKIP {name}: {why}")
    for p in paths:
        CASES.append((p.name, "first"))
        if p.via_proxy:
            CASES.append((p.name, "repeat"))

    # Rounds: in each, every path once per client (a proxy: a first connection to a new name, then a
    # repeat to it); the order of the paths turns by one each round, and the clients' order flips, so
    # no sample always follows the same one.
    say(f"{SAMPLES} rounds: direct and {len(paths) - 1} proxies, clients {' and '.join(CLIENTS)}, relay delay "
        f"{DELAY_MS:g} ms each way"
        f"{' (a TCP connection costs a round trip)' if CONNECT_RTT else ' (no round trip for the TCP connection)'}")
    results = {client: {case: [] for case in CASES} for client in CLIENTS}
    for r in range(SAMPLES):
        order = paths[r % len(paths):] + paths[:r % len(paths)]
        clients = CLIENTS if r % 2 == 0 else CLIENTS[::-1]
        for p in order:
            for client in clients:
                name = f"r{r}-{p.kind}-{client}.{DOMAIN}"
                for which in (("first", "repeat") if p.via_proxy else ("first",)):
                    time.sleep(0.15)  # the last sample's connections closed (the relay delays each end)
                    try:
                        t = SAMPLERS[client](p, name, relay_port, work)
                    except Exception as error:  # noqa: BLE001
                        raise Failure(f"{p.name} ({client}, {which}, {name}) failed: {type(error).__name__}: {error}")
                    t["name"] = name
                    results[client][(p.name, which)].append(t)
            p.alive(f"round {r + 1}")
        for client in CLIENTS:
            say(f"  round {r + 1} {client:6}: " + ", ".join(
                f"{n}{'' if w == 'first' else '+'} {results[client][(n, w)][-1]['first_byte'] * 1000:.0f}"
                for n, w in CASES) + " ms")
    time.sleep(1.0)  # the last connections closed: their log lines and relay events written
    return paths, skipped, results


# --- the report -----------------------------------------------------------------------------------

def read_jsonl(path):
    lines = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    lines.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return lines


def wall_of(ts):
    """A log line's ts (RFC 3339 UTC, milliseconds) as seconds since the epoch."""
    return datetime.strptime(ts.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def relay_connections(events, t):
    """The relay's connections accepted while sample `t` ran (its start to its end)."""
    begin, end = t["start"] - 0.002, t["start"] + t["end"] + 0.005
    return [e for e in events if begin <= e["accepted"] <= end]


def held(events, t):
    """Seconds from the relay's delivery of the server's last bytes before the client's first byte
    (read + the delay) to that first byte: the time the answer spent in the proxy (and the client),
    about 1 ms directly. None when the relay saw no answer."""
    first_byte = t["start"] + t["first_byte"]
    delivered = [e["accepted"] + offset + DELAY_MS / 1000 for e in relay_connections(events, t)
                 for offset, _ in e.get("reads_down", [])]
    delivered = [d for d in delivered if d <= first_byte]
    return first_byte - max(delivered) if delivered else None


def ms(seconds):
    return f"{seconds * 1000:.0f}" if seconds is not None else "-"


def timeline(path, results, log, events, client):
    """For each first connection through an atsproxy (and the median repeat): what the client saw,
    the timing fields of atsproxy's log lines for it, and the connections the relay (the server's
    side) saw; all in ms after the client started."""
    icpt = path.log and "icpt" in path.name
    out = ["", f"{path.name}: where the time goes ({client}'s samples; ms after the client's start). client: when it had "
               f"the CONNECT's 200, "
               f"had finished TLS, had the first byte. log: the connection line's ts and duration_ms"
               + ("; the request line's ts, send_ms, ttfb_ms; upstream_resumed" if icpt else "")
               + ". relay: each connection to the server: accepted, first bytes up (client to server), "
                 "first bytes down (read from nginx), closed; bytes up"]
    shown = list(results[(path.name, "first")])
    repeats = sorted(results[(path.name, "repeat")], key=lambda t: t["first_byte"])
    shown.append(repeats[len(repeats) // 2])
    summary = {"first": [], "repeat": []}
    for i, t in enumerate(shown):
        which = "first" if i < len(shown) - 1 else "repeat"

        def at(wall=None, mono=None):
            return f"{round(((wall - t['start_wall']) if wall is not None else (mono - t['start'])) * 1000):+d}"

        conn = next((l for l in log if l.get("host") == t["name"] and l.get("kind", "connection") == "connection"
                     and abs(wall_of(l["ts"]) - t["start_wall"]) < 0.2), None)
        req = next((l for l in log if conn and l.get("kind") == "request"
                    and l.get("connection_id") == conn.get("connection_id")), None)
        if conn:
            fields = [f"ts {at(wall=wall_of(conn['ts']))}", f"duration_ms {conn.get('duration_ms')}",
                      f"action {conn.get('action')}"]
            if conn.get("upstream_resumed") is not None:
                fields.append(f"upstream_resumed {str(conn['upstream_resumed']).lower()}")
            if req:
                fields.append(f"request ts {at(wall=wall_of(req['ts']))} send_ms {req.get('send_ms')} "
                              f"ttfb_ms {req.get('ttfb_ms')}")
        else:
            fields = ["no connection line for this host and time"]
        conns = relay_connections(events, t)
        relay = [f"{at(mono=e['accepted'])} {at(mono=e['first_up']) if 'first_up' in e else '-'} "
                 f"{at(mono=e['first_down']) if 'first_down' in e else '-'} {at(mono=e['closed'])} ({e['bytes_up']} B)"
                 for e in conns]
        summary[which].append((t, conns))
        out.append(f"   {which:6} {t['name']:18} client: 200 {ms(t['connect']):>3}, TLS {ms(t['tls']):>3}, "
                   f"first byte {ms(t['first_byte']):>3} (held {ms(held(events, t))}) | log: {', '.join(fields)}")
        out.append(f"   {'':25} relay: " + ("; ".join(relay) if relay else "no connection"))
    # One sentence from the medians of the first connections: when the verdict's connection and the
    # client's own reached the server.
    firsts = summary["first"]
    two = [(t, c) for t, c in firsts if len(c) == 2]
    if len(two) == len(firsts) and firsts:
        med = lambda xs: statistics.median(xs) * 1000  # noqa: E731
        probe_open = med([c[0]["accepted"] - t["start"] for t, c in two])
        probe_answer = med([c[0]["first_down"] - t["start"] for t, c in two if "first_down" in c[0]])
        ok200 = med([t["connect"] for t, _ in two])
        tunnel_open = med([c[1]["accepted"] - t["start"] for t, c in two])
        first_byte = med([t["first_byte"] for t, _ in two])
        hold = med([held(events, t) or 0 for t, _ in two])
        out.append(f"   medians of the {len(two)} first connections: the probe's connection opened at {probe_open:.0f}, "
                   f"the server's first answer to it reached the relay at {probe_answer:.0f}, the client had the 200 at "
                   f"{ok200:.0f}; the tunnel's own connection to the server opened at {tunnel_open:.0f} "
                   f"({tunnel_open / (2 * DELAY_MS):.1f} RTT in), then TCP + TLS + GET: first byte at {first_byte:.0f} "
                   f"({(first_byte - tunnel_open) / (2 * DELAY_MS):.1f} RTT after it opened, of which {hold:.0f} ms "
                   f"between the answer's delivery to the proxy and the client's first byte)")
    elif firsts and all(len(c) == 1 and "first_down" in c[0] for _, c in firsts):
        med = lambda xs: statistics.median(xs) * 1000  # noqa: E731
        opened = med([c[0]["accepted"] - t["start"] for t, c in firsts])
        answer = med([c[0]["first_down"] - t["start"] for t, c in firsts])
        tls = med([t["tls"] for t, _ in firsts])
        first_byte = med([t["first_byte"] for t, _ in firsts])
        hold = med([held(events, t) or 0 for t, _ in firsts])
        out.append(f"   medians of the {len(firsts)} first connections: one connection to the server, opened at {opened:.0f}; "
                   f"the server's first answer reached the relay at {answer:.0f}; the client's TLS was done at {tls:.0f}, "
                   f"its first byte at {first_byte:.0f} ({first_byte / (2 * DELAY_MS):.1f} RTT; {hold:.0f} ms after the "
                   f"answer's delivery to the proxy)")
    elif firsts:
        counts = sorted({len(c) for _, c in firsts})
        out.append(f"   the first connections used {'/'.join(map(str, counts))} connection(s) to the server each")
    return out


def report(paths, skipped, results, work):
    out = []
    events = read_jsonl(os.path.join(work, "relay-events.jsonl"))
    rtt = 2 * DELAY_MS
    out.append("")
    out.append(f"latency-bench: {os.cpu_count()} cores ({benchlib.cpu_model()}); nginx with TLS 1.2/1.3 (a P-256 leaf for *.{DOMAIN}) "
               f"behind relay.py: {DELAY_MS:g} ms each way = {rtt:g} ms round trip, "
               + ("a new TCP connection costs one round trip before its first bytes arrive" if CONNECT_RTT
                  else "a new TCP connection costs no round trip (CONNECT_RTT=0)"))
    for p in paths:
        out.append(f"   {p.name:14} {p.note}")
    for name, why in skipped.items():
        out.append(f"   {name:14} SKIP: {why}")
    primary = CLIENTS[0]
    medians = {}
    for client in CLIENTS:
        out.append("")
        what = {"curl": "curl (time_starttransfer; connection to the proxy kept alive, so CONNECT then TLS on it)",
                "python": "a Python ssl socket in the bench's process"}[client]
        out.append(f"Time to first byte of the response, client {what}: new TCP connection + (CONNECT) + TLS + "
                   f"GET /small, one at a time; {SAMPLES} samples per case, interleaved; ms"
                   + ("; the goals below are judged on this table" if client == primary and len(CLIENTS) > 1 else ""))
        if client == primary:
            out.append("   first: a host name never used before (a new verdict for atsproxy); repeat: the same name "
                       "again right after (a cached verdict)")
            out.append("   200, TLS: when the client had the CONNECT's answer and had finished its handshake; held: from the "
                       "relay's delivery of the answer's last bytes before the client's first byte to that first byte "
                       "(time in the proxy; medians); server conns: connections the relay (the server's side) accepted "
                       "per sample (median)")
        out.append(f"   {'case':22} {'median':>7} {'min':>6} {'max':>6} {'vs direct':>9} {'RTTs':>5} "
                   f"{'200':>5} {'TLS':>5} {'held':>5} {'server conns':>12}")
        res = results[client]
        direct = statistics.median(t["first_byte"] for t in res[("direct", "first")])
        medians[client] = {}
        for case in CASES:
            ts = res[case]
            fb = [t["first_byte"] for t in ts]
            med = statistics.median(fb)
            medians[client][case] = med
            connect = [t["connect"] for t in ts if t["connect"] is not None]
            conns = statistics.median(len(relay_connections(events, t)) for t in ts)
            holds = [h for h in (held(events, t) for t in ts) if h is not None]
            label = case[0] if case[0] == "direct" else f"{case[0]} {case[1]}"
            out.append(f"   {label:22} {med * 1000:7.1f} {min(fb) * 1000:6.1f} {max(fb) * 1000:6.1f} "
                       f"{med / direct:8.2f}x {med * 1000 / rtt:5.2f} "
                       f"{(ms(statistics.median(connect)) if connect else '-'):>5} "
                       f"{ms(statistics.median(t['tls'] for t in ts)):>5} "
                       f"{(ms(statistics.median(holds)) if holds else '-'):>5} {conns:12g}")
        out.append("   every sample (ms), in round order:")
        for case in CASES:
            label = case[0] if case[0] == "direct" else f"{case[0]} {case[1]}"
            out.append(f"   {label:22} " + " ".join(f"{t['first_byte'] * 1000:.0f}" for t in res[case]))

    # --- where atsproxy's first connection spends its time: its log and the relay's events ---
    for p in paths:
        if p.log:
            out += timeline(p, results[primary], read_jsonl(p.log), events, primary)

    # --- goals ---
    out.append("")
    direct = medians[primary][("direct", "first")]
    out.append(f"Goals ({primary}'s median time to first byte / its direct median, {direct * 1000:.1f} ms):")
    medians = medians[primary]
    rows = []
    for name, which, limit, round_trips in GOALS:
        case = (name, which)
        goal = f"<= {limit:.2f}x" if limit is not None else f"<= +{round_trips:g} RTT"
        if case not in medians:
            rows.append((f"{name} {which}", "not run", goal, "SKIP"))
            continue
        x = medians[case] / direct
        added = (medians[case] - direct) * 1000 / rtt
        met = (limit is None or x <= limit) and (round_trips is None or added <= round_trips)
        rows.append((f"{name} {which}", f"{medians[case] * 1000:.1f} ms = {x:.2f}x direct "
                     f"({(medians[case] - direct) * 1000:+.0f} ms, {added:+.1f} RTT)",
                     goal, "PASS" if met else "FAIL"))
    peers = []
    for name in ("squid", "mitmdump"):
        if (name, "first") in medians:
            peers.append(f"{name} {medians[(name, 'first')] / direct:.2f}x first, "
                         f"{medians[(name, 'repeat')] / direct:.2f}x repeat")
        elif name in skipped:
            rows.append((f"peer {name}", skipped[name], "-", "SKIP"))
    out += benchlib.goal_lines(rows, 22, 9)
    if peers:
        out.append(f"   for comparison: {'; '.join(peers)}")
    out.append(f"{benchlib.goal_count(rows)} (a benchmark, not a test)")
    return out


def main():
    benchlib.limit_run(TOTAL_LIMIT_S)
    benchlib.require_tools("bench-latency", {"openssl": "", "nginx": ""})
    benchlib.require_binaries()
    if SAMPLES < 1 or DELAY_MS < 0:
        raise Failure("SAMPLES must be at least 1 and DELAY_MS not negative")

    def run_and_report(work, processes):
        paths, skipped, results = run(work, processes)
        return report(paths, skipped, results, work)

    started = time.monotonic()
    lines = benchlib.in_scratch("latency-bench", say, run_and_report)
    print("\n".join(lines))
    print(f"\n(run took {time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    benchlib.run_main(main, say)
