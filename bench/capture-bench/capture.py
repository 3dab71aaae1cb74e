#!/usr/bin/env python3
"""bench/capture-bench/capture.py: the capture paths against the proxy setting, in namespaces.

Python standard library only; needs root, ip, nft, wg, wireguard-go and curl. Two network namespaces
the run makes and deletes: a router, where atsproxy (tunnel mode) and an HTTPS server run, and a
phone joined to it by a veth pair. The same client (curl on the phone: a new process, a new TCP
connection and a TLS handshake per sample) reaches the same server three ways:
  proxy        through the HTTP proxy setting: CONNECT to atsproxy's --listen
  transparent  dialling the server; the router's nftables redirect it to --transparent-listen
  wireguard    dialling the server through a WireGuard tunnel to --wireguard-listen (wireguard-go
               on both ends, the phone's from the .conf `atsproxyctl wireguard add-device` wrote)
and, for reference, directly (no proxy). It prints:
  - time to first byte (median, curl's time_starttransfer) of GET /small, each path's against the
    proxy setting's: goal <= 1.1x through transparent mode, <= 1.2x through WireGuard;
  - bulk download throughput (GET /bulk) through WireGuard as a ratio of transparent mode's;
  - the proxy's CPU per new connection on each path (atsproxy's utime+stime over a batch of
    connections; on the WireGuard path wireguard-go's own CPU beside it).
Everything is stopped and deleted on exit, on failure and on Ctrl-C.

Environment (all optional):
  ATSPROXY, ATSPROXYCTL  the binaries (default .build/release/ of this checkout)
  SAMPLES       time-to-first-byte samples per path, interleaved (15)
  BATCH         connections per path for the CPU figure (60)
  BULK_MIB      size of /bulk (256); BULK_RUNS downloads per path (3)
  KEEP=1        keep the scratch directory
"""

import os
import statistics
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(TOP, "bench", "benchlib"))
import benchlib  # noqa: E402
from benchlib import Failure  # noqa: E402

SAMPLES = int(os.environ.get("SAMPLES", "15"))
BATCH = int(os.environ.get("BATCH", "60"))
BULK_MIB = int(os.environ.get("BULK_MIB", "256"))
BULK_RUNS = int(os.environ.get("BULK_RUNS", "3"))
NAME = "capture." + benchlib.DOMAIN
PROXY_PORT, TRANSPARENT_PORT, WG_PORT = 8080, 8443, 51820
# The server's addresses, one per path, so each path has its own route on the phone.
ADDRESS = {"direct": "10.78.0.2", "proxy": "10.78.0.2", "transparent": "10.78.0.3", "wireguard": "10.78.0.4"}
GOALS = {"transparent": 1.1, "wireguard": 1.2}

SERVER = r"""
import http.server, socket, ssl, sys
small = b"x" * 1024
bulk_size = int(sys.argv[3]) * 1048576
chunk = b"\0" * 262144
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def setup(self):
        # The head and the body go out as they are written: no 40 ms of Nagle and delayed ACK.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().setup()
    def do_GET(self):
        body_size = len(small) if self.path == "/small" else bulk_size
        self.send_response(200)
        self.send_header("Content-Length", str(body_size))
        self.end_headers()
        if self.path == "/small":
            self.wfile.write(small)
            return
        left = bulk_size
        while left > 0:
            piece = chunk[:min(left, len(chunk))]
            self.wfile.write(piece)
            left -= len(piece)
server = http.server.ThreadingHTTPServer(("0.0.0.0", 443), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = context.wrap_socket(server.socket, server_side=True)
print("PORT 443", flush=True)
server.serve_forever()
"""


def say(text):
    print(text, flush=True)


def run(argv, **kwargs):
    return subprocess.run(argv, check=True, timeout=60, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, **kwargs)


class Namespaces:
    """The router and the phone; deleted (with wireguard-go on both ends) on exit."""

    def __init__(self):
        tag = uuid.uuid4().hex[:6]
        self.router, self.phone = f"capbench-r-{tag}", f"capbench-p-{tag}"
        self.server_interface, self.phone_interface = f"cbs{tag}", f"cbp{tag}"
        run(["ip", "netns", "add", self.router])
        run(["ip", "netns", "add", self.phone])
        addresses = "\n".join(f"ip addr add {a}/24 dev sv0" for a in sorted(set(ADDRESS.values())))
        run(self.inside(self.router) + ["sh", "-ec", f"""
            ip link set lo up
            ip link add sv0 type veth peer name sv1
            {addresses}
            ip link set sv0 up; ip link set sv1 up
            ip link add rv0 type veth peer name pv0 netns {self.phone}
            ip addr add 10.99.0.1/24 dev rv0; ip link set rv0 up
            """])
        run(self.inside(self.phone) + ["sh", "-ec", f"""
            ip link set lo up; ip addr add 10.99.0.2/24 dev pv0; ip link set pv0 up
            ip route add {ADDRESS['direct']}/32 via 10.99.0.1
            ip route add {ADDRESS['transparent']}/32 via 10.99.0.1
            """])
        # transparent: what `atsproxyctl capture rules --interface rv0` prints, for the transparent address.
        run(self.inside(self.router) + ["nft", "-f", "-"], input=f"""
            table inet capbench {{
                chain prerouting {{
                    type nat hook prerouting priority dstnat; policy accept;
                    iifname "rv0" ip daddr {ADDRESS['transparent']} tcp dport 443 redirect to :{TRANSPARENT_PORT}
                }}
            }}
            """)

    @staticmethod
    def inside(namespace):
        return ["ip", "netns", "exec", namespace]

    def delete(self):
        for namespace in (self.phone, self.router):
            subprocess.run(["ip", "netns", "del", namespace], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def curl(net, path, url_path, out="/dev/null", timeout=120):
    """curl on the phone: seconds to first byte, total, and bytes downloaded."""
    argv = net.inside(net.phone) + [
        "curl", "-sS", "--max-time", str(timeout), "--cacert", net.root,
        "--resolve", f"{NAME}:443:{ADDRESS[path]}", "-o", out,
        "-w", "%{time_starttransfer} %{time_total} %{size_download}"]
    # --noproxy "*" would override --proxy too: the proxy path names its proxy, the others none.
    argv += ["--proxy", f"http://10.99.0.1:{PROXY_PORT}"] if path == "proxy" else ["--noproxy", "*"]
    result = subprocess.run(argv + [f"https://{NAME}{url_path}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, timeout=timeout + 10)
    if result.returncode != 0:
        raise Failure(f"curl through {path}: {result.stderr.strip()}")
    first, total, size = result.stdout.split()
    return float(first), float(total), int(size)


def own_cpu_seconds(pid):
    """utime + stime of `pid` alone, in seconds: not benchlib's tree, since wireguard-go is
    atsproxy's child and its CPU is shown on its own."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / benchlib.CLOCK_TICKS


def wireguard_go_pid(router_interface):
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if f.read().split(b"\0")[:2] == [b"wireguard-go", router_interface.encode()]:
                        return int(entry)
            except OSError:
                continue
    return None


def main():
    benchlib.limit_run(900)
    if os.geteuid() != 0:
        raise Failure("needs root (network namespaces, nftables, WireGuard)")
    benchlib.require_tools("bench-capture", {tool: "" for tool in ("ip", "nft", "wg", "wg-quick", "wireguard-go", "curl", "openssl")})
    benchlib.require_binaries()
    benchlib.in_scratch("capture-bench", say, measure)


def measure(work, processes):
    net = Namespaces()
    try:
        measure_in(net, work, processes)
    finally:
        net.delete()


def measure_in(net, work, processes):
    benchlib.make_certificates(work)
    net.root = os.path.join(work, "root.pem")
    with open(os.path.join(work, "server.py"), "w") as f:
        f.write(SERVER)
    server = processes.start(
        "server", net.inside(net.router) + ["python3", os.path.join(work, "server.py"), os.path.join(work, "chain.pem"),
                                            os.path.join(work, "leaf.key"), str(BULK_MIB)],
        stdout=subprocess.PIPE, text=True)
    if "PORT" not in server.stdout.readline():
        raise Failure("the HTTPS server did not start")
    hosts = os.path.join(work, "hosts")
    with open(hosts, "w") as f:
        f.write(f"{ADDRESS['proxy']} {NAME}\n")
    state = os.path.join(work, "wireguard")
    control = os.path.join(work, "control.sock")
    log = open(os.path.join(work, "atsproxy.err"), "w")
    daemon = processes.start("atsproxy", net.inside(net.router) + [
        benchlib.ATSPROXY, "--listen", f"0.0.0.0:{PROXY_PORT}", "--allow-client", "10.99.0.0/24",
        "--transparent-listen", f"0.0.0.0:{TRANSPARENT_PORT}", "--wireguard-listen", f"0.0.0.0:{WG_PORT}",
        "--wireguard-dir", state, "--wireguard-interface", net.server_interface, "--hosts-file", hosts,
        "--ca-file", net.root, "--system-roots", "off", "--control-socket", control, "--web-listen", "off",
        "--log-file", os.path.join(work, "atsproxy.log")], stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 30
    while not os.path.exists(control):
        if daemon.poll() is not None or time.monotonic() > deadline:
            raise Failure("atsproxy did not start: " + benchlib.tail(log.name))
        time.sleep(0.05)
    run([benchlib.ATSPROXYCTL, "wireguard", "add-device", "bench-phone", "--dir", state, "--endpoint",
         f"10.99.0.1:{WG_PORT}", "--output-dir", work, "--socket", control])
    stripped = run(["wg-quick", "strip", os.path.join(work, "bench-phone.conf")]).stdout
    phone_conf = os.path.join(work, "phone.wg")
    with open(phone_conf, "w") as f:
        f.write(stripped)
    phone_wg = processes.start("wireguard-go (phone)", net.inside(net.phone) + ["wireguard-go", net.phone_interface],
                               env={**os.environ, "WG_PROCESS_FOREGROUND": "1"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    socket_path = f"/var/run/wireguard/{net.phone_interface}.sock"
    deadline = time.monotonic() + 30
    while not os.path.exists(socket_path):
        if phone_wg.poll() is not None or time.monotonic() > deadline:
            raise Failure("the phone's wireguard-go did not start")
        time.sleep(0.05)
    run(net.inside(net.phone) + ["sh", "-ec", f"""
        wg setconf {net.phone_interface} {phone_conf}
        ip addr add 10.65.84.2/32 dev {net.phone_interface}
        ip link set {net.phone_interface} up
        ip route add {ADDRESS['wireguard']}/32 dev {net.phone_interface}
        """])

    paths = ["direct", "proxy", "transparent", "wireguard"]
    for path in paths:  # each path's first connection: the probe, the verdict cached, the tunnel's handshake
        curl(net, path, "/small")

    first = {path: [] for path in paths}
    for _ in range(SAMPLES):
        for path in paths:
            first[path].append(curl(net, path, "/small")[0] * 1000)

    cpu = {}
    wg_pid = wireguard_go_pid(net.server_interface)
    for path in paths[1:]:
        before = own_cpu_seconds(daemon.pid)
        wg_before = own_cpu_seconds(wg_pid) if wg_pid else 0
        for _ in range(BATCH):
            curl(net, path, "/small")
        cpu[path] = ((own_cpu_seconds(daemon.pid) - before) * 1000 / BATCH,
                     ((own_cpu_seconds(wg_pid) - wg_before) * 1000 / BATCH) if wg_pid else None)

    bulk = {path: [] for path in ("direct", "transparent", "wireguard")}
    for _ in range(BULK_RUNS):
        for path in bulk:
            _, total, size = curl(net, path, "/bulk", timeout=300)
            bulk[path].append(size / total / 1048576)

    median = {path: statistics.median(values) for path, values in first.items()}
    say(f"capture-bench: {os.cpu_count()} cores, {benchlib.cpu_model()}; atsproxy {benchlib.ATSPROXY}")
    say(f"time to first byte of GET /small, median of {SAMPLES} new connections (curl on the phone namespace):")
    for path in paths:
        ratio = median[path] / median["proxy"]
        say(f"   {path:12} {median[path]:7.2f} ms   {ratio:5.2f}x the proxy setting's")
    say(f"bulk GET /bulk ({BULK_MIB} MiB), median of {BULK_RUNS}:")
    best = {path: statistics.median(values) for path, values in bulk.items()}
    for path in bulk:
        say(f"   {path:12} {best[path]:8.1f} MiB/s")
    say(f"   wireguard / transparent: {best['wireguard'] / best['transparent']:.2f}")
    say(f"CPU per new connection ({BATCH} per path), atsproxy's own (wireguard-go's beside it):")
    for path, (proxy_ms, wg_ms) in cpu.items():
        extra = f"   + wireguard-go {wg_ms:.2f} ms" if path == "wireguard" and wg_ms is not None else ""
        say(f"   {path:12} {proxy_ms:6.2f} ms{extra}")
    rows = []
    for path, goal in GOALS.items():
        ratio = median[path] / median["proxy"]
        rows.append((f"time to first byte, {path} / proxy setting", f"{ratio:.2f}x", f"<= {goal}x",
                     "PASS" if ratio <= goal else "FAIL"))
    say("goals:")
    for line in benchlib.goal_lines(rows, 44, 8):
        say(line)
    say(benchlib.goal_count(rows))


if __name__ == "__main__":
    benchlib.run_main(main, say)
