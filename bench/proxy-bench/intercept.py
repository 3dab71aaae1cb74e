#!/usr/bin/env python3
"""bench/proxy-bench/intercept.py: atsproxy's intercept mode against mitmproxy and squid's ssl-bump.

Python standard library only; mitmdump is run as a program (MITMDUMP, `make bench-intercept` installs
it into its own virtual environment). Reuses bench/benchlib/benchlib.py (the run's set-up: checks,
certificates, nginx, atsproxy, mitmdump, squid, process groups; the CONNECT client, /proc readers, the
thread pool, curl, the tables' shared parts).
Everything runs on 127.0.0.1 and is stopped on exit, on failure and on Ctrl-C. See README.md,
"Intercept mode".

Proxies, all on the same nginx upstream (TLS, a leaf for *.good.test from a test root):
  atsproxy-icpt  atsproxy --inspect intercept --ca-dir (atsproxyctl ca init: ECDSA P-256)
  mitmdump       mitmproxy's mitmdump, its own CA in --set confdir, the test root as upstream CA
  squid-bump     squid (squid-openssl) with ssl-bump: peek at step 1, then bump; a P-256 CA
  atsproxy-tun   atsproxy in tunnel mode (the reference: no interception)
Each client trusts only the CA of the proxy it goes through (the test root for the tunnel and for
direct), so a request that was not intercepted fails instead of counting.

Environment (all optional):
  ATSPROXY, ATSPROXYCTL  the binaries (default .build/release/ of this checkout)
  MITMDUMP      mitmdump (default: .build/bench-venv/bin/mitmdump, then PATH); missing: SKIP
  REQUESTS      requests per round of the CPU phase (800; mitmdump gets a quarter)
  ROUNDS        rounds of it per proxy, interleaved (3; the median round is reported)
  CONCURRENCY   client threads of the CPU phase (50)
  NEW_NAMES     first requests to new names in the minting phase, per proxy (20)
  SIZE_MIB      bulk download size (256); REPS downloads per path (3)
  TUNNELS       idle intercepted connections held per proxy (500)
  TUNNEL_BENCH  1 (default): run.sh's tunnel-mode bench afterwards, its table printed as part 5; 0 skips
  THREADS       atsproxy --threads (default the number of cores)
  KEEP=1        keep the scratch directory
"""

import os
import shutil
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

ATSPROXY = benchlib.ATSPROXY
REQUESTS = int(os.environ.get("REQUESTS", "800"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
CONCURRENCY = int(os.environ.get("CONCURRENCY", "50"))
NEW_NAMES = int(os.environ.get("NEW_NAMES", "20"))
SIZE_MIB = int(os.environ.get("SIZE_MIB", "256"))
REPS = int(os.environ.get("REPS", "3"))
TUNNELS = int(os.environ.get("TUNNELS", "500"))
TUNNEL_BENCH = os.environ.get("TUNNEL_BENCH", "1") != "0"
THREADS = os.environ.get("THREADS", str(os.cpu_count() or 2))
TOTAL_LIMIT_S = 1500

DOMAIN = benchlib.DOMAIN  # good.test: the upstream's leaf is for *.good.test
WARM = f"w.{DOMAIN}"
NAMES_PER_PROXY = NEW_NAMES + 5
ORDER = ["atsproxy-icpt", "mitmdump", "squid-bump", "atsproxy-tun"]
GOALS = {"cpu_ms": 0.9, "mint_ms": 2.0, "bulk_x_squid": 2.0, "kib": 60.0}


def say(message):
    print(f"intercept-bench: {message}", file=sys.stderr, flush=True)


# --- set-up ---------------------------------------------------------------------------------------

def openssl(work, *args):
    subprocess.run(["openssl", *args], cwd=work, check=True, timeout=60, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def start_nginx(work, processes):
    """nginx with /small (1 KiB) and /big (SIZE_MIB, sparse), connections kept 600 s: its port."""
    www = benchlib.make_www(work, pages=[("small", "x" * 1024)], sparse=[("big", SIZE_MIB)])
    return benchlib.start_nginx(processes, work, www, keepalive_requests=100000)


def hosts_file(work):
    """Every name the run uses, on 127.0.0.1: the warm name, bulk, and NAMES_PER_PROXY new ones per proxy."""
    path = os.path.join(work, "hosts")
    with open(path, "w") as f:
        f.write(f"127.0.0.1 {WARM} bulk.{DOMAIN}\n")
        for name in ORDER:
            f.write(f"127.0.0.1 {' '.join(new_name(name, i) for i in range(NAMES_PER_PROXY))}\n")
    return path


def new_name(proxy_name, i):
    return f"n{i}-{proxy_name}.{DOMAIN}"


def start_squid(work, processes, hosts):
    squid = shutil.which("squid")
    certgen = "/usr/lib/squid/security_file_certgen"
    if not squid:
        return None, "squid not installed (apt-get install squid-openssl)"
    if not os.access(certgen, os.X_OK) or "--with-openssl" not in subprocess.run(
            [squid, "-v"], capture_output=True, text=True, timeout=30).stdout:
        return None, "this squid has no OpenSSL (ssl-bump needs Debian's squid-openssl, not squid)"
    d = os.path.join(work, "squid")
    os.makedirs(d)
    openssl(d, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-sha256", "-nodes", "-days", "30",
            "-subj", "/CN=intercept-bench squid CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-keyout", "ca.key", "-out", "ca.pem")
    subprocess.run([certgen, "-c", "-s", os.path.join(d, "ssl_db"), "-M", "16MB"], check=True, timeout=60,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if os.getuid() == 0:  # squid and its helpers drop to the proxy user
        subprocess.run(["chown", "-R", "proxy:proxy", d], check=False, timeout=30)
    os.chmod(os.path.join(d, "ca.key"), 0o644)
    try:
        process, port, version = benchlib.start_squid(
            work, processes, "squid-bump", hosts,
            port_options=(f" ssl-bump tls-cert={d}/ca.pem tls-key={d}/ca.key generate-host-certificates=on "
                          "dynamic_cert_mem_cache_size=16MB"),
            settings=f"""sslcrtd_program {certgen} -s {d}/ssl_db -M 16MB
sslcrtd_children 5 startup=1 idle=1
acl step1 at_step SslBump1
ssl_bump peek step1
ssl_bump bump all
tls_outgoing_options cafile={work}/root.pem
max_filedescriptors 65536
client_persistent_connections on
server_persistent_connections on
""")
    except Failure as failure:
        return None, str(failure)
    note = (f"{version} (squid-openssl), ssl-bump: peek at step 1 then bump (the upstream handshake first), "
            "a P-256 CA, security_file_certgen -M 16MB (5 helpers), dynamic_cert_mem_cache_size=16MB, no access log")
    return benchlib.Proxy("squid-bump", port, process, os.path.join(d, "ca.pem"), note), None


# --- clients --------------------------------------------------------------------------------------

def read_response(tls):
    """One HTTP/1.1 response with Content-Length, read to its end: (status line, body bytes)."""
    head, body = benchlib.read_head(tls, "closed before the response head")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = tls.recv(65536)
        if not chunk:
            raise ConnectionError("closed in the response body")
        body += chunk
    status = head.split(b"\r\n", 1)[0]
    if not status.startswith(b"HTTP/1.1 200"):
        raise ConnectionError(f"answered {status!r}")
    return status, len(body)


def open_and_get(proxy, name, port, keep_alive=True, timeout=60):
    """New connection, CONNECT, TLS, GET /small, the response read; returns the open TLS socket.
    Host carries the port (as curl sends it): squid's bumped requests go where Host says."""
    tls = benchlib.tls_through(benchlib.connect_tunnel(proxy.address, (name, port), timeout=timeout), proxy.context, name)
    try:
        close = "" if keep_alive else "Connection: close\r\n"
        tls.sendall(f"GET /small HTTP/1.1\r\nHost: {name}:{port}\r\n{close}\r\n".encode())
        read_response(tls)
    except BaseException:
        tls.close()
        raise
    return tls


def one_request(proxy, name, port):
    """load.py's one_request's request (Connection: close), with the port in Host."""
    open_and_get(proxy, name, port, keep_alive=False).close()


def timed_request(proxy, name, port):
    """Seconds for one new connection + CONNECT + TLS + GET /small, response read (Connection: close)."""
    started = time.perf_counter()
    one_request(proxy, name, port)
    return time.perf_counter() - started


# --- phases ---------------------------------------------------------------------------------------

def phase_cpu(proxies, port):
    """CPU per new intercepted request: ROUNDS interleaved rounds per proxy, CONCURRENCY clients."""
    rounds = {p.name: [] for p in proxies}
    counts = {p.name: REQUESTS // 4 if p.name == "mitmdump" else REQUESTS for p in proxies}
    for p in proxies:  # warm-up: leaf cache, verdict cache, first-use page-ins
        ok, errors, _ = benchlib.run_parallel(100, CONCURRENCY, lambda _: one_request(p, WARM, port))
        if errors:
            raise Failure(f"warm-up through {p.name}: {len(errors)} of 100 failed, first: {errors[0]}")
    for r in range(ROUNDS):
        for p in proxies:
            n = counts[p.name]
            time.sleep(0.3)
            before = benchlib.cpu_seconds(p.pid)
            ok, errors, wall = benchlib.run_parallel(n, CONCURRENCY, lambda _: one_request(p, WARM, port))
            time.sleep(0.3)
            after = benchlib.cpu_seconds(p.pid)
            p.alive("the CPU phase")
            if errors:
                raise Failure(f"{p.name}: {len(errors)} of {n} requests failed, first: {errors[0]}")
            user, system = after[0] - before[0], after[1] - before[1]
            row = {"requests": n, "wall": wall, "ms": (user + system) * 1000 / n, "user_ms": user * 1000 / n,
                   "sys_ms": system * 1000 / n}
            rounds[p.name].append(row)
            say(f"  {p.name} round {r + 1}: {row['ms']:.3f} ms/request ({n} in {wall:.1f} s, {n / wall:.0f}/s)")
    return rounds


def phase_mint(proxies, port):
    """Time of a first request to a new name vs a repeat to a warm one, one at a time, interleaved."""
    result = {}
    for p in proxies:
        for _ in range(3):
            timed_request(p, WARM, port)
        warm, new = [], []
        for i in range(NEW_NAMES):
            warm.append(timed_request(p, WARM, port))
            new.append(timed_request(p, new_name(p.name, i), port))
        warm.append(timed_request(p, WARM, port))
        p.alive("the minting phase")
        result[p.name] = {"warm": statistics.median(warm), "new": statistics.median(new),
                          "added": statistics.median(new) - statistics.median(warm), "n": NEW_NAMES}
        say(f"  {p.name}: new name {result[p.name]['new'] * 1000:.2f} ms, warm name {result[p.name]['warm'] * 1000:.2f} ms "
            f"(medians of {NEW_NAMES})")
    return result


def phase_bulk(proxies, port, cafile_direct):
    url = f"https://bulk.{DOMAIN}:{port}/big"
    paths = [("direct", dict(cafile=cafile_direct, resolve=f"bulk.{DOMAIN}:{port}:127.0.0.1"), None)]
    paths += [(p.name, dict(cafile=p.cafile, proxy=p.address), p) for p in proxies]
    for name, kw, _ in paths:
        benchlib.curl_download(url, kw["cafile"], proxy=kw.get("proxy"), resolve=kw.get("resolve"), timeout=300)
    speeds = {name: [] for name, _, _ in paths}
    cpu = {name: [] for name, _, p in paths if p}
    for rep in range(REPS):
        for name, kw, p in paths:
            before = sum(benchlib.cpu_seconds(p.pid)) if p else 0
            size, speed = benchlib.curl_download(url, kw["cafile"], proxy=kw.get("proxy"), resolve=kw.get("resolve"), timeout=300)
            if size != SIZE_MIB * 1048576:
                raise Failure(f"the download through {name} got {size} bytes")
            if p:
                time.sleep(0.05)
                cpu[name].append((sum(benchlib.cpu_seconds(p.pid)) - before) / (size / 2**30))
                p.alive("the bulk phase")
            speeds[name].append(speed / 1048576)
            say(f"  {name} run {rep + 1}: {speed / 1048576:.0f} MiB/s")
    return speeds, cpu


def phase_idle(proxy, port):
    """TUNNELS connections, each CONNECT + TLS + one GET with keep-alive, held: RSS growth per connection."""
    return benchlib.hold_idle(proxy, TUNNELS, lambda: open_and_get(proxy, WARM, port), "connections", say)


# --- the run --------------------------------------------------------------------------------------

def main():
    benchlib.limit_run(TOTAL_LIMIT_S)
    benchlib.require_tools("bench-intercept", {"openssl": "", "curl": "", "nginx": ""})
    benchlib.require_binaries()
    benchlib.raise_open_files(4 * TUNNELS + 1024, f"TUNNELS={TUNNELS}")
    started = time.monotonic()
    lines = benchlib.in_scratch("intercept-bench", say, run)
    print("\n".join(lines))
    print(f"\n(run took {time.monotonic() - started:.0f} s; a benchmark, not a test)")
    if TUNNEL_BENCH:
        say("5. tunnel mode: bench/proxy-bench/run.sh (its own nginx, atsproxy, squid, tinyproxy)")
        env = dict(os.environ, ATSPROXY=ATSPROXY, SIZE_MIB=os.environ.get("TUNNEL_SIZE_MIB", "256"),
                   REPS=os.environ.get("TUNNEL_REPS", "3"))
        print("\n5. Tunnel mode, the existing bench (bench/proxy-bench/run.sh, same machine, right after):", flush=True)
        status = subprocess.run([os.path.join(HERE, "run.sh")], env=env).returncode
        if status != 0:
            raise Failure(f"run.sh failed ({status})")


def run(work, processes):
    say(f"scratch directory {work}")
    benchlib.make_certificates(work)
    root = os.path.join(work, "root.pem")
    port = start_nginx(work, processes)
    hosts = hosts_file(work)
    benchlib.make_atsproxy_ca(work)
    proxies, skipped = [], {}
    proxies.append(benchlib.start_atsproxy(work, processes, "atsproxy-icpt", hosts, True, THREADS, ["--verdict-ttl", "3600"]))
    mitm, why = benchlib.start_mitmdump(work, processes)
    if mitm:
        proxies.append(mitm)
    else:
        skipped["mitmdump"] = why
    squid, why = start_squid(work, processes, hosts)
    if squid:
        proxies.append(squid)
    else:
        skipped["squid-bump"] = why
    proxies.append(benchlib.start_atsproxy(work, processes, "atsproxy-tun", hosts, False, THREADS, ["--verdict-ttl", "3600"]))
    benchlib.first_requests(proxies, lambda p: timed_request(p, WARM, port), skipped, work, say)
    say("proxies: " + ", ".join(f"{p.name} :{p.port} (pid {p.pid})" for p in proxies))
    by = {p.name: p for p in proxies}

    say(f"1/4 CPU per new request: {ROUNDS} rounds x {REQUESTS} per proxy (mitmdump {REQUESTS // 4}), "
        f"{CONCURRENCY} clients, interleaved")
    cpu = phase_cpu(proxies, port)
    say(f"2/4 minting: {NEW_NAMES} first requests to new names vs repeats to {WARM}, one at a time")
    mint = phase_mint(proxies, port)
    say(f"3/4 bulk: {REPS} x {SIZE_MIB} MiB, direct and through each proxy, interleaved")
    speeds, bulk_cpu = phase_bulk(proxies, port, root)
    say(f"4/4 memory: {TUNNELS} idle connections per proxy, each after one GET (keep-alive)")
    idle = {p.name: phase_idle(p, port) for p in proxies}

    # Every request atsproxy intercepted was logged: a line per request in its log.
    log_lines = sum(1 for _ in open(os.path.join(work, "atsproxy-icpt.log")))
    err_text = benchlib.tail(os.path.join(work, "atsproxy-icpt.err"), 5).strip()

    # --- the table ---
    out = []
    out.append("")
    out.append(f"intercept-bench: {os.cpu_count()} cores ({benchlib.cpu_model()}); upstream nginx with TLS 1.3, "
               f"a P-256 leaf for *.{DOMAIN} from an RSA test root")
    for p in proxies:
        out.append(f"   {p.name:14} {p.note}")
    for name, why in skipped.items():
        out.append(f"   {name:14} SKIP: {why}")

    peers = [n for n in ("mitmdump", "squid-bump", "atsproxy-tun") if n in by]
    out.append("")
    mid = {n: sorted(r, key=lambda x: x["ms"])[len(r) // 2] for n, r in cpu.items()}
    out.append(f"1. Proxy CPU per new intercepted HTTPS request, leaf cache warm ({ROUNDS} rounds; each request a new "
               f"connection + CONNECT + TLS + GET /small, {CONCURRENCY} clients; utime+stime of the process tree; median round)")
    out.append(f"   {'':14} {'ms/req':>7} {'user':>6} {'sys':>6} {'req/s':>6} {'ats-icpt/it':>11}  rounds ms/req")
    ms = {n: mid[n]["ms"] for n in mid}
    for p in proxies:
        r = mid[p.name]
        rel = f"{ms['atsproxy-icpt'] / ms[p.name]:10.2f}x" if p.name != "atsproxy-icpt" and ms[p.name] else f"{'':11}"
        out.append(f"   {p.name:14} {r['ms']:7.3f} {r['user_ms']:6.3f} {r['sys_ms']:6.3f} {r['requests'] / r['wall']:6.0f} "
                   f"{rel}  " + " ".join(f"{x['ms']:.3f}" for x in cpu[p.name]))
    out.append("")
    out.append(f"2. Time added to the first request to a new host (leaf minting, new verdict, new name): median of "
               f"{NEW_NAMES} first requests to new names minus the median of {NEW_NAMES + 1} repeats to a warm name, "
               f"one at a time (wall clock of new connection + CONNECT + TLS + GET)")
    out.append(f"   {'':14} {'new name':>9} {'warm name':>10} {'added':>9}")
    for p in proxies:
        m = mint[p.name]
        out.append(f"   {p.name:14} {m['new'] * 1000:7.2f}ms {m['warm'] * 1000:8.2f}ms {m['added'] * 1000:7.2f}ms")
    out.append("")
    med = {n: statistics.median(v) for n, v in speeds.items()}
    out.append(f"3. Bulk TLS throughput, one download of {SIZE_MIB} MiB (curl -o /dev/null; {REPS} runs interleaved, median; "
               f"MiB/s = 2^20 bytes/s) and the proxy's CPU per GiB")
    out.append(f"   {'':14} {'MiB/s':>7} {'vs direct':>9} {'ats-icpt/it':>11} {'CPU s/GiB':>9}  runs MiB/s")
    for n in speeds:
        c = f"{statistics.median(bulk_cpu[n]):9.2f}" if n in bulk_cpu else f"{'':9}"
        rel = f"{med['atsproxy-icpt'] / med[n]:10.2f}x" if n != "atsproxy-icpt" else f"{'':11}"
        out.append(f"   {n:14} {med[n]:7.0f} {med[n] / med['direct']:8.2f}x {rel} {c}  "
                   + " ".join(f"{v:.0f}" for v in speeds[n]))
    out.append("")
    out.append(f"4. Resident memory per idle intercepted connection ({TUNNELS} held, each CONNECT + TLS + one GET /small "
               f"with keep-alive; VmRSS growth of the process tree / {TUNNELS})")
    out += benchlib.idle_lines(idle, 14)
    out.append("")
    made = 1 + 100 + ROUNDS * REQUESTS + (3 + 2 * NEW_NAMES + 1) + (1 + REPS) + TUNNELS
    out.append(f"   atsproxy-icpt log: {log_lines} lines for the {made} requests the client made through it "
               f"(a line per request); last stderr lines: {err_text or '(empty)'}")

    # --- goals ---
    rows = []
    a = ms["atsproxy-icpt"]
    peer_txt = ", ".join(f"{n} {ms[n]:.3f} ms ({a / ms[n]:.2f}x)" for n in peers)
    rows.append(("1. CPU per new intercepted request, warm leaf", f"{a:.3f} ms; {peer_txt}", f"<= {GOALS['cpu_ms']} ms",
                 "PASS" if a <= GOALS["cpu_ms"] else "FAIL"))
    added = mint["atsproxy-icpt"]["added"] * 1000
    peer_txt = ", ".join(f"{n} {mint[n]['added'] * 1000:.2f} ms" for n in peers)
    rows.append(("2. time added to a first request to a new host", f"{added:.2f} ms; {peer_txt}", f"<= {GOALS['mint_ms']} ms",
                 "PASS" if added <= GOALS["mint_ms"] else "FAIL"))
    if "squid-bump" in med:
        x = med["atsproxy-icpt"] / med["squid-bump"]
        rows.append(("3. bulk TLS throughput through interception", f"{med['atsproxy-icpt']:.0f} MiB/s = {x:.2f}x squid-bump "
                     f"({med['squid-bump']:.0f}); mitmdump {med.get('mitmdump', 0):.0f}, tunnel {med['atsproxy-tun']:.0f}, "
                     f"direct {med['direct']:.0f}", f">= {GOALS['bulk_x_squid']:.0f}x squid", "PASS" if x >= GOALS["bulk_x_squid"] else "FAIL"))
    else:
        rows.append(("3. bulk TLS throughput through interception", f"{med['atsproxy-icpt']:.0f} MiB/s; squid-bump: "
                     f"{skipped.get('squid-bump')}", f">= {GOALS['bulk_x_squid']:.0f}x squid", "SKIP"))
    k = idle["atsproxy-icpt"]["kib"]
    peer_txt = ", ".join(f"{n} {idle[n]['kib']:.1f}" for n in peers)
    rows.append(("4. memory per idle intercepted connection", f"{k:.1f} KiB; {peer_txt}", f"<= {GOALS['kib']:.0f} KiB",
                 "PASS" if k <= GOALS["kib"] and idle["atsproxy-icpt"]["alive"] == TUNNELS else "FAIL"))
    for n in ("mitmdump", "squid-bump"):
        if n in skipped:
            rows.append((f"   peer {n}", skipped[n], "-", "SKIP"))
    out.append("")
    out.append("Goals for atsproxy in intercept mode:")
    out += benchlib.goal_lines(rows, 48, 18)
    out.append(benchlib.goal_count(rows))
    return out


if __name__ == "__main__":
    benchlib.run_main(main, say)
