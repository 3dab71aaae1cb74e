#!/usr/bin/env python3
"""bench/hostile-bench: atsproxy against upstreams that never answer or answer a byte at a time.

Python standard library only; reuses bench/benchlib/benchlib.py (the run's set-up: checks,
certificates, nginx, atsproxy, squid, process groups; /proc readers, curl). Starts everything it
measures (certificates, nginx, the hostile upstreams, atsproxy, squid), all on loopback, and stops
all of it on exit, on failure and on Ctrl-C. See README.md in this directory.

Environment (all optional):
  ATSPROXY      the atsproxy binary (default .build/release/atsproxy of this checkout)
  SILENT        upstreams that accept and never answer (400)
  DRIP          upstreams that send one byte every 2 s (16)
  SAMPLES       time-to-first-byte samples, with no load and under load (7)
  SNIS          distinct host names CONNECTed to for the memory figure (20000)
  HOLD_S        longest the hostile load is held, from its first CONNECT (40)
  SIZE_MIB      bulk download size (256); REPS downloads per path (3); BULK=0 skips the bulk phase
  THREADS       atsproxy --threads (default: the daemon's own default)
  DAEMON_FLAGS  more atsproxy flags, e.g. "--verdict-cache-size 100" (experiments)
  KEEP=1        keep the scratch directory (configs, logs) and print its path
"""

import os
import selectors
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "bench", "benchlib"))
sys.dont_write_bytecode = True  # no __pycache__ left in the checkout
import benchlib  # noqa: E402  (bench/benchlib/benchlib.py: processes, certificates, nginx, /proc readers)
from benchlib import Failure  # noqa: E402

ATSPROXY = benchlib.ATSPROXY
SILENT = int(os.environ.get("SILENT", "400"))
DRIP = int(os.environ.get("DRIP", "16"))
SAMPLES = int(os.environ.get("SAMPLES", "7"))
SNIS = int(os.environ.get("SNIS", "20000"))
HOLD_S = float(os.environ.get("HOLD_S", "40"))
SIZE_MIB = int(os.environ.get("SIZE_MIB", "256"))
REPS = int(os.environ.get("REPS", "3"))
BULK = os.environ.get("BULK", "1") != "0"
THREADS = os.environ.get("THREADS")
DAEMON_FLAGS = os.environ.get("DAEMON_FLAGS", "").split()  # extra atsproxy flags, for experiments
TOTAL_LIMIT_S = 600  # the whole run, whatever happens

GOOD_ADDRESS = "127.0.0.1"
DOMAIN = benchlib.DOMAIN  # the compliant host's certificate is for *.good.test; every name below resolves to nginx


def say(message):
    print(f"hostile-bench: {message}", file=sys.stderr, flush=True)


# --- processes ------------------------------------------------------------------------------------

def status_field(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise Failure(f"no {field} in /proc/{pid}/status")


def nofile_limit(pid):
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                return line.split()[3]
    return "?"


# --- clients --------------------------------------------------------------------------------------

class Names:
    """A new, never-probed name for every compliant sample: the verdict cache cannot answer it."""

    def __init__(self):
        self.count = 0

    def next(self):
        self.count += 1
        return f"t{self.count}.{DOMAIN}"


SAMPLE_NAMES = 200  # the hosts file carries t1..t200.good.test for samples and warm-up


def time_to_first_byte(proxy, name, port, context, timeout):
    """CONNECT name:port, TLS through the tunnel, GET /, first byte of the answer: seconds, or None on timeout."""
    started = time.monotonic()
    deadline = started + timeout

    def left():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout("sample deadline")
        return remaining

    sock = None
    try:
        sock = socket.create_connection(proxy, timeout=left())
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(f"CONNECT {name}:{port} HTTP/1.1\r\nHost: {name}:{port}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            sock.settimeout(left())
            chunk = sock.recv(4096)
            if not chunk:
                raise Failure(f"the proxy closed the CONNECT to {name} without an answer")
            head += chunk
        status = head.split(b"\r\n", 1)[0]
        if b" 200" not in status:
            raise Failure(f"CONNECT {name} answered {status.decode(errors='replace')}")
        sock.settimeout(left())
        tls = context.wrap_socket(sock, server_hostname=name)
        sock = tls
        tls.sendall(f"GET / HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n".encode())
        tls.settimeout(left())
        if not tls.recv(1):
            raise Failure(f"no answer to GET through {name}")
        return time.monotonic() - started
    except (socket.timeout, TimeoutError):
        return None
    finally:
        if sock is not None:
            sock.close()


def sample_ttfb(proxy, port, context, names, count, deadline):
    """Up to `count` samples, one after the other, each with a new name; stops at `deadline`.
    Returns (seconds list, timed-out count)."""
    times, timed_out = [], 0
    for _ in range(count):
        remaining = deadline - time.monotonic()
        if remaining <= 0.5:
            break
        t = time_to_first_byte(proxy, names.next(), port, context, remaining)
        if t is None:
            timed_out += 1
            break
        times.append(t)
    return times, timed_out


class HostileLoad:
    """Opens one CONNECT to every hostile upstream at once and records, per connection, how long the
    proxy took to answer it or close it, until every one is answered or `hold` seconds pass."""

    def __init__(self, proxy, targets):
        self.proxy, self.targets = proxy, targets  # targets: [(kind, name, port)]
        self.waited = {}  # index -> seconds until answer/close
        self.answers = {}  # index -> first line of the answer, or "closed"
        self.socks = {}
        self.opened_at = None
        self.done = threading.Event()

    def run(self, hold):
        selector = selectors.DefaultSelector()
        self.opened_at = time.monotonic()
        for i, (_, name, port) in enumerate(self.targets):
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect(self.proxy)
            except BlockingIOError:
                pass
            self.socks[i] = s
            selector.register(s, selectors.EVENT_WRITE, (i, f"CONNECT {name}:{port} HTTP/1.1\r\nHost: {name}:{port}\r\n\r\n".encode()))
        started = {i: self.opened_at for i in self.socks}
        deadline = self.opened_at + hold
        while len(self.waited) < len(self.targets) and time.monotonic() < deadline:
            for key, events in selector.select(timeout=0.2):
                i, request = key.data
                s = key.fileobj
                if request is not None:
                    err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        self.waited[i], self.answers[i] = time.monotonic() - started[i], f"connect error {err}"
                        selector.unregister(s)
                        continue
                    s.send(request)  # 60 bytes: one send
                    selector.modify(s, selectors.EVENT_READ, (i, None))
                    continue
                try:
                    data = s.recv(4096)
                except OSError as error:
                    data, note = b"", f"closed ({error.__class__.__name__})"
                else:
                    note = "closed"
                self.waited[i] = time.monotonic() - started[i]
                self.answers[i] = data.split(b"\r\n", 1)[0].decode(errors="replace") if data else note
                selector.unregister(s)
        selector.close()
        self.done.set()

    def close(self):
        for s in self.socks.values():
            try:
                s.close()
            except OSError:
                pass


def connect_only(proxy, name, port):
    """CONNECT name:port, the proxy's answer read, closed: the first line of the answer."""
    sock = socket.create_connection(proxy, timeout=60)
    try:
        sock.sendall(f"CONNECT {name}:{port} HTTP/1.1\r\nHost: {name}:{port}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                break
            head += chunk
        return head.split(b"\r\n", 1)[0].decode(errors="replace") or "closed"
    finally:
        sock.close()


def run_pool(count, concurrency, work, deadline):
    """work(i) for i in range(count) on `concurrency` threads until done or `deadline`; returns
    (results, done): how many times each result (or failure, "Type: message") came, and how many
    finished."""
    results, lock = {}, threading.Lock()

    def tally(i):
        result = work(i)
        with lock:
            results[result] = results.get(result, 0) + 1

    ok, errors, _ = benchlib.run_parallel(count, concurrency, tally, deadline)
    with lock:
        for error in errors:
            results[error] = results.get(error, 0) + 1
    return results, ok + len(errors)


# --- the run --------------------------------------------------------------------------------------

def fmt_s(t):
    return f"{t * 1000:.1f} ms" if t < 0.1 else f"{t * 1000:.0f} ms" if t < 1 else f"{t:.1f} s"


class Report:
    def __init__(self):
        self.rows = []

    def add(self, label, figure, goal, verdict):
        self.rows.append((label, figure, goal, verdict))
        say(f"{label}: {figure} (goal {goal}): {verdict}")

    def print(self, header):
        print()
        print(header)
        width = max(len(r[1]) for r in self.rows)
        for label, figure, goal, verdict in self.rows:
            print(f"{label}\n    {figure:{width}}  goal {goal:34} {verdict}")


def main():
    benchlib.limit_run(TOTAL_LIMIT_S)
    benchlib.require_tools("bench-hostile", {tool: f"apt-get install {tool}" for tool in ("openssl", "curl", "nginx")})
    if not os.access(ATSPROXY, os.X_OK):
        raise Failure(f"no atsproxy binary at {ATSPROXY}: swift build -c release --product atsproxy, or set ATSPROXY")

    # Every CONNECT costs the proxy a descriptor for the client and one for the upstream (two while
    # it probes); the upstreams' process holds a listener and a connection per upstream.
    import resource
    need = 4 * (SILENT + DRIP) + 4096
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for limit in (65536, hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, max(limit, hard) if hard != resource.RLIM_INFINITY else hard))
            break
        except (ValueError, OSError):
            continue
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        raise Failure(f"open-file limit {soft} is below the {need} this run needs; raise it (ulimit -n) or lower SILENT")

    help_text = subprocess.run([ATSPROXY, "--help"], capture_output=True, text=True, timeout=30).stdout
    has_handshake_flag = "--handshake-timeout" in help_text
    handshake_timeout = 10.0

    started_at = time.monotonic()
    report = benchlib.in_scratch("hostile-bench", say, lambda work, processes: run(
        work, processes, has_handshake_flag, handshake_timeout))
    report.print(f"hostile-bench: {os.cpu_count()} cores, atsproxy "
                 f"{'--handshake-timeout ' + str(int(handshake_timeout)) if has_handshake_flag else '(no --handshake-timeout flag: 10 s assumed)'}, "
                 f"{SILENT} silent + {DRIP} drip upstreams, {SNIS} SNIs; run took {time.monotonic() - started_at:.0f} s")
    print(f"\n{benchlib.goal_count(report.rows)} (a benchmark, not a test)")


def run(work, processes, has_handshake_flag, handshake_timeout):
    report = Report()
    say(f"scratch directory {work}")
    benchlib.make_certificates(work)
    cafile = os.path.join(work, "root.pem")
    context = benchlib.client_context(cafile)

    # --- the compliant host: nginx, *.good.test ---
    www = benchlib.make_www(work, pages=[("index.html", "ok\n")], sparse=[("big", SIZE_MIB)])
    good_port = benchlib.start_nginx(processes, work, www)

    # --- the hostile upstreams ---
    _, ports = benchlib.start_announcing(processes, work, "upstreams", [
        sys.executable, os.path.join(HERE, "upstreams.py"), "--silent", str(SILENT), "--drip", str(DRIP)], "the hostile upstreams")

    # --- names: every host the run CONNECTs to, by name ---
    with open(os.path.join(work, "hosts"), "w") as f:
        if SILENT:
            f.write(f"127.0.0.2 {' '.join(f'silent{i}.test' for i in range(SILENT))}\n")
        if DRIP:
            f.write(f"127.0.0.3 {' '.join(f'drip{i}.test' for i in range(DRIP))}\n")
        f.write(f"{GOOD_ADDRESS} bulk.{DOMAIN} {' '.join(f't{i}.{DOMAIN}' for i in range(1, SAMPLE_NAMES + 1))}\n")
        for start in range(0, SNIS, 100):
            f.write(f"{GOOD_ADDRESS} {' '.join(f's{i}.{DOMAIN}' for i in range(start, min(SNIS, start + 100)))}\n")

    # --- atsproxy ---
    handshake_flag = ["--handshake-timeout", str(int(handshake_timeout))] if has_handshake_flag else []
    atsproxy = benchlib.start_atsproxy(work, processes, "atsproxy", os.path.join(work, "hosts"), threads=THREADS,
                                       flags=handshake_flag + DAEMON_FLAGS)
    daemon, proxy, proxy_port, pid = atsproxy.process, atsproxy.address, atsproxy.port, atsproxy.pid
    say(f"nginx :{good_port}, atsproxy :{proxy_port} (pid {pid}, open-file limit {nofile_limit(pid)}), "
        f"{SILENT} silent upstreams on 127.0.0.2, {DRIP} drip upstreams on 127.0.0.3")

    def alive(phase):
        if daemon.poll() is not None:
            raise Failure(f"atsproxy exited ({daemon.returncode}) during {phase}: {benchlib.tail(os.path.join(work, 'atsproxy.err'))}")
        for path in ("atsproxy.err",):
            text = benchlib.tail(os.path.join(work, path), 200)
            if "Too many open files" in text or "EMFILE" in text:
                raise Failure(f"atsproxy ran out of descriptors during {phase}: {text}")

    names = Names()
    time.sleep(0.5)
    rss_start = status_field(pid, "VmRSS")
    threads_start = status_field(pid, "Threads")

    # --- 1a. time to first byte, no load ---
    say(f"1/4 time to first byte, no load: {SAMPLES} samples, each a name never probed")
    warm = time_to_first_byte(proxy, names.next(), good_port, context, 20)  # first use: page-ins, lazy set-up
    if warm is None:
        raise Failure("the compliant host did not answer through the proxy within 20 s with no load")
    base, _ = sample_ttfb(proxy, good_port, context, names, SAMPLES, time.monotonic() + 60)
    if len(base) < SAMPLES:
        raise Failure(f"only {len(base)} of {SAMPLES} no-load samples answered")
    alive("the no-load samples")

    # --- 5. bulk: throughput vs direct, CPU per GiB vs squid ---
    bulk_rows = None
    if BULK:
        bulk_rows = bulk_phase(work, processes, proxy, pid, good_port, cafile)
        alive("the bulk downloads")

    # --- 3. memory after SNIS distinct names ---
    say(f"2/4 memory: CONNECTs to {SNIS} distinct names (s0..s{SNIS - 1}.{DOMAIN}), 32 at a time")
    time.sleep(1)
    rss_idle = status_field(pid, "VmRSS")
    sni_deadline = time.monotonic() + 150
    started = time.monotonic()
    results, done = run_pool(SNIS, 32, lambda i: connect_only(proxy, f"s{i}.{DOMAIN}", good_port), sni_deadline)
    sni_wall = time.monotonic() - started
    time.sleep(1)
    rss_after = status_field(pid, "VmRSS")
    answered_200 = sum(n for r, n in results.items() if " 200" in r)
    others = {r: n for r, n in results.items() if " 200" not in r}
    alive("the SNI phase")
    say(f"  {done} CONNECTs in {sni_wall:.1f} s ({done / sni_wall:.0f}/s), {answered_200} answered 200"
        + (f"; others: {dict(list(others.items())[:3])}" if others else ""))

    # --- 2 + 1b + 4: the hostile load ---
    say(f"3/4 hostile load: {SILENT} silent + {DRIP} drip CONNECTs at once, held up to {HOLD_S:.0f} s; "
        f"{SAMPLES} samples of the compliant host meanwhile")
    time.sleep(0.5)
    threads_before = status_field(pid, "Threads")
    fds_before = len(os.listdir(f"/proc/{pid}/fd"))
    targets = []
    for i in range(SILENT):  # the drips spread evenly among the silent ones
        targets.append(("silent", f"silent{i}.test", ports["silent"][i]))
        if DRIP and i % max(1, SILENT // DRIP) == 0 and sum(1 for t in targets if t[0] == "drip") < DRIP:
            j = sum(1 for t in targets if t[0] == "drip")
            targets.append(("drip", f"drip{j}.test", ports["drip"][j]))
    while sum(1 for t in targets if t[0] == "drip") < DRIP:
        j = sum(1 for t in targets if t[0] == "drip")
        targets.append(("drip", f"drip{j}.test", ports["drip"][j]))
    hostile = HostileLoad(proxy, targets)
    peak = {"threads": threads_before, "fds": fds_before, "rss": status_field(pid, "VmRSS")}

    def watch():
        while not hostile.done.is_set():
            try:
                peak["threads"] = max(peak["threads"], status_field(pid, "Threads"))
                peak["fds"] = max(peak["fds"], len(os.listdir(f"/proc/{pid}/fd")))
                peak["rss"] = max(peak["rss"], status_field(pid, "VmRSS"))
            except (OSError, Failure):
                return
            time.sleep(0.25)

    loader = threading.Thread(target=hostile.run, args=(HOLD_S,), daemon=True)
    watcher = threading.Thread(target=watch, daemon=True)
    loader.start()
    watcher.start()
    time.sleep(1.0)  # every CONNECT sent and waiting
    load_deadline = hostile.opened_at + HOLD_S
    loaded, load_timeouts = sample_ttfb(proxy, good_port, context, names, SAMPLES, load_deadline - 0.5)
    loaded_at = time.monotonic() - hostile.opened_at
    loader.join(timeout=HOLD_S + 10)
    watcher.join(timeout=2)
    alive("the hostile load")
    threads_during = peak["threads"]
    hostile.close()
    time.sleep(2)
    threads_after = status_field(pid, "Threads")
    alive("the hostile load's end")
    fds_after = len(os.listdir(f"/proc/{pid}/fd"))

    # --- the report ---
    say("4/4 done; stopping everything")
    base_median = statistics.median(base)
    if loaded and not load_timeouts:
        loaded_median = statistics.median(loaded)
        ratio = loaded_median / base_median
        report.add("1. compliant host, time to first byte under the hostile load / with none (CONNECT + probe + TLS + GET, "
                   "new name each sample, median)",
                   f"{ratio:.2f}x ({fmt_s(loaded_median)} under load, {fmt_s(base_median)} with none; "
                   f"{len(loaded)} + {len(base)} samples)", "<= 1.5x", "PASS" if ratio <= 1.5 else "FAIL")
    else:
        waited = loaded_at - 1.0 - sum(loaded)
        report.add("1. compliant host, time to first byte under the hostile load / with none (CONNECT + probe + TLS + GET, "
                   "new name each sample, median)",
                   f">= {waited / base_median:.0f}x: {len(loaded)} of {SAMPLES} samples answered; one waited {waited:.1f} s "
                   f"and was given up at the {HOLD_S:.0f} s hold (no load: {fmt_s(base_median)}, {len(base)} samples)",
                   "<= 1.5x", "FAIL")
    report.add("2. daemon threads (/proc/PID/status Threads) just before the load -> peak during -> 2 s after",
               f"{threads_before} -> {threads_during} -> {threads_after} ({threads_start} at start; "
               f"descriptors {fds_before} -> {peak['fds']} -> {fds_after})",
               "unchanged", "PASS" if threads_before == max(threads_during, threads_after) else "FAIL")
    growth_mib = (rss_after - rss_idle) / 1024
    complete = done == SNIS and answered_200 == SNIS
    report.add(f"3. daemon RSS after CONNECTs to {SNIS} distinct names (each probed once: {answered_200} answered 200"
               f"{'' if complete else ', INCOMPLETE'}; {sni_wall:.0f} s)",
               f"+{growth_mib:.1f} MiB ({rss_idle / 1024:.1f} -> {rss_after / 1024:.1f} MiB; "
               f"{rss_start / 1024:.1f} MiB at start)",
               "<= 10 MB (9.5 MiB) above idle", "PASS" if complete and (rss_after - rss_idle) * 1024 <= 10e6 else "FAIL")
    limit = handshake_timeout + 1
    for kind in ("silent", "drip"):
        idx = [i for i, t in enumerate(targets) if t[0] == kind]
        if not idx:
            continue
        waits = [hostile.waited.get(i) for i in idx]
        answered = [w for w in waits if w is not None]
        pending = len(waits) - len(answered)
        censored = sorted(answered + [HOLD_S] * pending)  # a pending one waited at least HOLD_S
        median = statistics.median(censored)
        kinds = {}
        for i in idx:
            a = hostile.answers.get(i, "still waiting")
            a = a.split(" ", 1)[1] if a.startswith("HTTP/") else a
            kinds[a] = kinds.get(a, 0) + 1
        answers = ", ".join(f"{n} {a}" for a, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
        if answered and pending:
            answers += f"; the answered ones after {min(answered):.1f}-{max(answered):.1f} s"
        med_text = f"> {HOLD_S:.0f} s" if pending * 2 >= len(waits) else fmt_s(median)
        max_text = f"> {HOLD_S:.0f} s" if pending else fmt_s(max(answered))
        met = not pending and max(answered) <= limit
        number = "4." if kind == "silent" else "4b."
        report.add(f"{number} how long each {kind} CONNECT waited for the proxy's answer or close "
                   f"({len(waits)} upstreams{', one byte every 2 s' if kind == 'drip' else ''})",
                   f"max {max_text}, median {med_text} ({answers})",
                   f"<= {limit:.0f} s (handshake timeout + 1 s)", "PASS" if met else "FAIL")
    if bulk_rows:
        for row in bulk_rows:
            report.add(*row)
    else:
        report.add("5. bulk throughput / CPU per GiB", "skipped (BULK=0)", "-", "SKIP")
    return report


def bulk_phase(work, processes, proxy, pid, good_port, cafile):
    """Direct, through atsproxy, through squid: REPS downloads of SIZE_MIB each, interleaved; each
    proxy's CPU (utime+stime of its process tree) around each download."""
    rows = []
    squid = None
    if shutil.which("squid"):
        squid, squid_port, _ = benchlib.start_squid(work, processes, "squid", os.path.join(work, "hosts"),
                                                    settings="max_filedescriptors 65536\n")
    say(f"   bulk: {REPS} x {SIZE_MIB} MiB direct, through atsproxy{', through squid' if squid else ''}, interleaved")
    url = f"https://bulk.{DOMAIN}:{good_port}/big"
    paths = {"direct": dict(resolve=f"bulk.{DOMAIN}:{good_port}:{GOOD_ADDRESS}"), "atsproxy": dict(proxy=proxy)}
    tree = {"atsproxy": pid}
    if squid:
        paths["squid"] = dict(proxy=("127.0.0.1", squid_port))
        tree["squid"] = squid.pid
    for name, kw in paths.items():  # warm: page cache, verdict cache
        benchlib.curl_download(url, cafile, **kw)
    speeds = {n: [] for n in paths}
    cpu_per_gib = {n: [] for n in tree}
    for _ in range(REPS):
        for name, kw in paths.items():
            before = sum(benchlib.cpu_seconds(tree[name])) if name in tree else 0
            size, speed = benchlib.curl_download(url, cafile, **kw)
            if size != SIZE_MIB * 1048576:
                raise Failure(f"the download through {name} got {size} bytes")
            if name in tree:
                time.sleep(0.05)
                cpu_per_gib[name].append((sum(benchlib.cpu_seconds(tree[name])) - before) / (size / 2**30))
            speeds[name].append(speed / 1e6)
    med = {n: statistics.median(v) for n, v in speeds.items()}
    ratio = med["atsproxy"] / med["direct"]
    squid_ratio = f", squid {med['squid'] / med['direct']:.2f}x" if squid else ""
    rows.append((f"5a. bulk throughput through one tunnel / direct ({REPS} x {SIZE_MIB} MiB over TLS, curl, median)",
                 f"{ratio:.2f}x ({med['atsproxy']:.0f} MB/s vs {med['direct']:.0f}{squid_ratio}; runs "
                 + " ".join(f"{v:.0f}" for v in speeds["atsproxy"]) + ")",
                 ">= 0.9x", "PASS" if ratio >= 0.9 else "FAIL"))
    ats_cpu = statistics.median(cpu_per_gib["atsproxy"])
    if squid:
        squid_cpu = statistics.median(cpu_per_gib["squid"])
        cpu_ratio = ats_cpu / squid_cpu if squid_cpu > 0 else float("inf")
        rows.append(("5b. proxy CPU per GiB relayed (utime+stime of the process tree, 10 ms ticks; median) / squid's",
                     f"{cpu_ratio:.2f}x ({ats_cpu:.2f} s/GiB vs squid {squid_cpu:.2f} s/GiB)",
                     "<= 0.5x", "PASS" if cpu_ratio <= 0.5 else "FAIL"))
    else:
        rows.append(("5b. proxy CPU per GiB relayed / squid's", f"atsproxy {ats_cpu:.2f} s/GiB; squid not installed",
                     "<= 0.5x", "SKIP"))
    return rows


if __name__ == "__main__":
    benchlib.run_main(main, say)
