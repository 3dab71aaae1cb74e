"""bench/benchlib/benchlib.py: what the Python benches share (Python standard library only).

hostile-bench/hostile.py, proxy-bench/intercept.py and load.py, latency-bench/latency.py and
h2-bench/h2.py put this directory on sys.path and import it. It holds:
  the run       run_main (exit codes), limit_run (SIGTERM, the time limit), require_tools,
                require_binaries, raise_open_files, in_scratch (scratch directory, processes)
  processes     Processes (own process group, PR_SET_PDEATHSIG, stopped with their children),
                free_port, wait_for_port, tail, start_announcing (a helper that prints its ports)
  servers       make_certificates (a test root, a leaf for *.good.test), make_www, start_nginx
  proxies       Proxy, make_atsproxy_ca, start_atsproxy, start_mitmdump, start_squid,
                first_requests
  measuring     process_tree, cpu_seconds, rss_kib, open_fds, threads (/proc), run_parallel,
                count_alive, hold_idle (memory per idle connection) and idle_lines (its table)
  clients       client_context, connect_tunnel, open_tunnel, read_head, tls_through,
                curl_download
  the report    cpu_model, goal_lines, goal_count

Environment it reads (each bench's header documents them): ATSPROXY, ATSPROXYCTL (default
.build/release/ of this checkout), MITMDUMP (default .build/bench-venv/bin/mitmdump, then PATH),
KEEP=1 (keep the scratch directory).
"""

import json
import os
import resource
import selectors
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ATSPROXY = os.environ.get("ATSPROXY", os.path.join(TOP, ".build", "release", "atsproxy"))
ATSPROXYCTL = os.environ.get("ATSPROXYCTL", os.path.join(os.path.dirname(ATSPROXY), "atsproxyctl"))
MITMDUMP = os.environ.get("MITMDUMP") or next(
    (p for p in (os.path.join(TOP, ".build", "bench-venv", "bin", "mitmdump"), shutil.which("mitmdump") or "")
     if p and os.access(p, os.X_OK)), "")
KEEP = os.environ.get("KEEP") == "1"
DOMAIN = "good.test"  # the test leaf is for *.good.test; every bench's names end in it
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class Failure(Exception):
    """The run cannot go on; run_main says why and exits 1."""


# --- the run --------------------------------------------------------------------------------------

def run_main(main, say):
    """Runs main() as the bench's command: a Failure is said ("error: ...") and exits 1; Ctrl-C,
    once everything started is stopped, exits 130."""
    try:
        main()
    except Failure as failure:
        say(f"error: {failure}")
        sys.exit(1)
    except KeyboardInterrupt:
        say("interrupted; everything it started is stopped")
        sys.exit(130)


def limit_run(seconds):
    """SIGTERM ends the run with exit status 143, and a Failure is raised wherever the run is once it
    has taken `seconds` (SIGALRM; in_scratch cancels it). Both unwind, so what was started is stopped."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(Failure(f"the run took over {seconds} s")))
    signal.alarm(seconds)


def require_tools(target, tools):
    """Adds /usr/sbin and /sbin to PATH (nginx and squid live there), then raises a Failure for the
    first of `tools` not on it: "TOOL not found: 'make TARGET' installs it", followed by
    " (HINT)" when tools[TOOL], the hint, is not empty."""
    os.environ["PATH"] = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    for tool, hint in tools.items():
        if not shutil.which(tool):
            raise Failure(f"{tool} not found: 'make {target}' installs it" + (f" ({hint})" if hint else ""))


def require_binaries():
    """Raises a Failure unless ATSPROXY and ATSPROXYCTL are executables."""
    for binary in (ATSPROXY, ATSPROXYCTL):
        if not os.access(binary, os.X_OK):
            raise Failure(f"no {binary}: swift build -c release, or set ATSPROXY / ATSPROXYCTL")


def raise_open_files(need, knobs):
    """Raises this process's soft open-file limit (which its children inherit) to 65,536, or to the
    hard limit if that is lower; raises a Failure if it is still below `need`, naming `knobs`, the
    settings that make the need ("TUNNELS=500")."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(65536, hard) if hard != resource.RLIM_INFINITY else 65536, hard))
    except (ValueError, OSError):
        pass
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < need:
        raise Failure(f"open-file limit too low for {knobs}")


def in_scratch(name, say, run):
    """Calls run(work, processes) and returns what it returns: `work` a new scratch directory,
    /tmp/NAME.XXXXXX (mode 755: nginx's workers and squid drop to other users when started as
    root), `processes` a new Processes. Whatever happens, then: the alarm is cancelled, every
    process stopped, and the directory removed (with KEEP=1 kept, and its path said)."""
    work = tempfile.mkdtemp(prefix=f"{name}.")
    os.chmod(work, 0o755)
    processes = Processes()
    try:
        return run(work, processes)
    finally:
        signal.alarm(0)
        processes.stop_all()
        if KEEP:
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


# --- processes ------------------------------------------------------------------------------------

def _child_setup():
    os.setpgrp()  # its own group: Ctrl-C reaches the driver only, which then stops the whole group
    try:  # and die with the driver, even if it is killed outright
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001
        pass


class Processes:
    """The processes a run started, each in its own process group and killed if the driver dies;
    stop_all stops them with their children (nginx's workers, squid's kid)."""

    def __init__(self):
        self.started = []  # (name, Popen)

    def start(self, name, argv, **kwargs):
        process = subprocess.Popen(argv, preexec_fn=_child_setup, **kwargs)
        self.started.append((name, process))
        return process

    def stop_all(self):
        for _, p in reversed(self.started):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except OSError:
                    pass
        deadline = time.monotonic() + 5
        for _, p in self.started:
            try:
                p.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for _, p in self.started:  # the group too: nginx's workers, squid's kid
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                p.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass


def free_port(address="127.0.0.1"):
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def wait_for_port(port, name, process, work, seconds=15):
    """Returns once 127.0.0.1:port accepts a connection; a Failure if `process` exits first (with
    the end of work/NAME.err) or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise Failure(f"{name} exited at start-up: {tail(os.path.join(work, name + '.err'))}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise Failure(f"{name} did not listen on 127.0.0.1:{port} within {seconds} s")


def tail(path, lines=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log)"


def start_announcing(processes, work, name, argv, what):
    """Starts argv as `name` (stderr to work/NAME.err), a helper that prints one JSON line on its
    stdout once it is ready (the relay, the hostile upstreams); returns (its process, that line
    decoded). A Failure naming it (`what`) if no line comes within 30 s or it exits first."""
    process = processes.start(name, argv, stdout=subprocess.PIPE, stderr=open(os.path.join(work, f"{name}.err"), "w"),
                              text=True)
    ready = selectors.DefaultSelector()
    ready.register(process.stdout, selectors.EVENT_READ)
    if not ready.select(timeout=30):
        raise Failure(f"{what} did not start within 30 s")
    line = process.stdout.readline()
    if not line:
        raise Failure(f"{what} exited: {tail(os.path.join(work, name + '.err'))}")
    return process, json.loads(line)


# --- servers --------------------------------------------------------------------------------------

def make_certificates(work):
    """In `work`: root.pem and root.key (an RSA-2048 test root), leaf.pem and leaf.key (an ECDSA
    P-256 leaf for *.DOMAIN signed by it), chain.pem (leaf then root), the keys readable by all."""
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=work, check=True, timeout=60,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-sha256", "-nodes", "-days", "30",
            "-subj", "/CN=hostile-bench root", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-keyout", "root.key", "-out", "root.pem")
    # ECDSA P-256: ATS accepts it, and it signs ten times faster than RSA-2048, so nginx's side of
    # 20,000 probes costs little.
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "leaf.key")
    openssl("req", "-new", "-key", "leaf.key", "-subj", f"/CN=*.{DOMAIN}", "-out", "leaf.csr")
    with open(os.path.join(work, "leaf.ext"), "w") as f:
        f.write(f"subjectAltName=DNS:*.{DOMAIN}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature\n")
    openssl("x509", "-req", "-in", "leaf.csr", "-CA", "root.pem", "-CAkey", "root.key", "-CAcreateserial",
            "-sha256", "-days", "30", "-extfile", "leaf.ext", "-out", "leaf.pem")
    with open(os.path.join(work, "chain.pem"), "w") as out:
        for name in ("leaf.pem", "root.pem"):
            with open(os.path.join(work, name)) as f:
                out.write(f.read())
    for name in ("root.key", "leaf.key"):
        os.chmod(os.path.join(work, name), 0o644)


def make_www(work, pages=(), sparse=()):
    """Makes work/www, what start_nginx serves, and returns its path: each (name, text) of `pages`
    written as a file, each (name, MiB) of `sparse` a sparse file of that size (so a download reads
    it from the page cache, not the disk)."""
    www = os.path.join(work, "www")
    os.makedirs(www)
    for name, text in pages:
        with open(os.path.join(www, name), "w") as f:
            f.write(text)
    for name, mib in sparse:
        with open(os.path.join(www, name), "wb") as f:
            f.truncate(mib * 1048576)
    return www


def start_nginx(processes, work, www, keepalive_requests=None, http2=False):
    """nginx on a free 127.0.0.1 port serving `www` over TLS 1.2/1.3 (and HTTP/2 if `http2`) with
    the run's chain.pem and leaf.key (made by make_certificates), one worker, logging nothing; with
    `keepalive_requests`, a connection is kept 600 s idle and for that many requests (nginx's
    defaults otherwise). Returns the port once it listens."""
    port = free_port()
    keepalive = (f"    keepalive_timeout 600s;\n    keepalive_requests {keepalive_requests};\n"
                 "    client_header_timeout 600s;\n") if keepalive_requests else ""
    os.makedirs(os.path.join(work, "nginx"), exist_ok=True)
    with open(os.path.join(work, "nginx.conf"), "w") as f:
        f.write(f"""worker_processes 1;
worker_rlimit_nofile 65536;
daemon off;
pid {work}/nginx/nginx.pid;
error_log {work}/nginx.err error;
events {{ worker_connections 65536; }}
http {{
    access_log off;
    client_body_temp_path {work}/nginx/body;
    proxy_temp_path {work}/nginx/proxy;
    fastcgi_temp_path {work}/nginx/fastcgi;
    uwsgi_temp_path {work}/nginx/uwsgi;
    scgi_temp_path {work}/nginx/scgi;
{keepalive}    server {{
        listen 127.0.0.1:{port} ssl{" http2" if http2 else ""};
        ssl_certificate {work}/chain.pem;
        ssl_certificate_key {work}/leaf.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        root {www};
    }}
}}
""")
    nginx = processes.start("nginx", ["nginx", "-p", f"{work}/nginx", "-c", f"{work}/nginx.conf", "-e", f"{work}/nginx.err"],
                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "nginx.err"), "a"))
    wait_for_port(port, "nginx", nginx, work)
    return port


# --- proxies --------------------------------------------------------------------------------------

class Proxy:
    """A proxy the run started: its name, its port on 127.0.0.1 and its process, the CA file a
    client trusts to go through it (and a client context trusting only that), and the note the
    table prints about how it runs."""

    def __init__(self, name, port, process, cafile, note):
        self.name, self.port, self.process, self.cafile, self.note = name, port, process, cafile, note
        self.context = client_context(cafile)
        self.address = ("127.0.0.1", port)

    @property
    def pid(self):
        return self.process.pid

    def alive(self, phase):
        if self.process.poll() is not None:
            raise Failure(f"{self.name} exited ({self.process.returncode}) during {phase}")


def make_atsproxy_ca(work):
    """atsproxyctl ca init into work/atsca: the CA start_atsproxy's intercept mode signs with."""
    subprocess.run([ATSPROXYCTL, "ca", "init", "--dir", os.path.join(work, "atsca")], check=True, timeout=60,
                   stdout=subprocess.DEVNULL)


def start_atsproxy(work, processes, name, hosts, intercept=False, threads=None, flags=()):
    """atsproxy (ATSPROXY) called `name` on a free 127.0.0.1 port: the ATS defaults policy, `hosts`
    as its hosts file, the test root as its only trust (--ca-file, --system-roots off), its control
    socket, log and stderr in `work` (NAME.sock, NAME.log, NAME.err), --shutdown-timeout 1,
    --threads `threads` if given, --inspect intercept with make_atsproxy_ca's CA if `intercept`, then
    `flags`. Returns its Proxy once it listens: clients trust the CA it signs with in intercept
    mode, else the test root; the note names the mode and the threads."""
    port = free_port()
    argv = [ATSPROXY, "--listen", f"127.0.0.1:{port}", "--policy", os.path.join(TOP, "config", "ats-defaults.plist"),
            "--hosts-file", hosts, "--control-socket", os.path.join(work, f"{name}.sock"),
            "--ca-file", os.path.join(work, "root.pem"), "--system-roots", "off",
            "--log-file", os.path.join(work, f"{name}.log"), "--shutdown-timeout", "1"]
    if threads:
        argv += ["--threads", threads]
    if intercept:
        argv += ["--inspect", "intercept", "--ca-dir", os.path.join(work, "atsca")]
    argv += list(flags)
    process = processes.start(name, argv, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, f"{name}.err"), "w"))
    wait_for_port(port, name, process, work)
    cafile = os.path.join(work, "atsca", "ca.pem") if intercept else os.path.join(work, "root.pem")
    note = (("--inspect intercept" if intercept else "tunnel mode (default)") + (f", --threads {threads}" if threads else "")
            + (", CA from atsproxyctl ca init (ECDSA P-256)" if intercept else ""))
    return Proxy(name, port, process, cafile, note)


def start_squid(work, processes, name, hosts, port_options="", settings=""):
    """squid (on PATH) called `name` on a free 127.0.0.1 port, `port_options` after the address on
    its http_port line, then the `settings` lines, then: every client allowed, no cache, no access
    log, `hosts` as its hosts file, no DNS, one worker, its cache.log in work/squid (made if missing
    and writable by all: squid drops to its own user when started as root). Returns (its process,
    its port, its version line) once it listens; a Failure with the end of its cache.log if not
    within 30 s."""
    squid = shutil.which("squid")
    d = os.path.join(work, "squid")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o777)
    port = free_port()
    with open(os.path.join(work, "squid.conf"), "w") as f:
        f.write(f"""http_port 127.0.0.1:{port}{port_options}
{settings}http_access allow all
cache deny all
cache_mem 8 MB
access_log none
cache_store_log none
cache_log {d}/cache.log
pid_filename none
coredump_dir {d}
netdb_filename none
hosts_file {hosts}
dns_nameservers 127.0.0.1
shutdown_lifetime 1 seconds
workers 1
via off
""")
    process = processes.start(name, [squid, "-f", os.path.join(work, "squid.conf"), "--foreground"],
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, f"{name}.err"), "w"))
    try:
        wait_for_port(port, name, process, work, seconds=30)
    except Failure as failure:
        raise Failure(f"squid did not start: {failure}; {tail(os.path.join(d, 'cache.log'), 5)}") from None
    version = subprocess.run([squid, "-v"], capture_output=True, text=True, timeout=30).stdout.split("\n")[0]
    return process, port, version


def first_requests(proxies, request, skipped, work, say):
    """request(proxy) through each of `proxies` once, so that one that fails is known before anything
    is measured: atsproxy (a name starting "atsproxy") ends the run, with the end of work/NAME.err;
    a peer is taken out of `proxies` and put in `skipped` ({name: why}). Then says each skipped one."""
    for p in list(proxies):
        try:
            request(p)
        except Exception as error:  # noqa: BLE001 - a peer that fails in any way is skipped
            if p.name.startswith("atsproxy"):
                raise Failure(f"the first request through {p.name} failed: {error}; "
                              f"{tail(os.path.join(work, p.name + '.err'), 5)}")
            failure = str(error) if isinstance(error, Failure) else f"{type(error).__name__}: {error}"
            skipped[p.name] = f"a request through it failed: {failure}"
            proxies.remove(p)
    for name, why in skipped.items():
        say(f"SKIP {name}: {why}")


MITM_ADDON = f'''# Sends every *.{DOMAIN} connection to 127.0.0.1 (the hosts file's job for the other proxies);
# the SNI and the certificate check stay the name's.
def server_connect(data):
    host, port = data.server.address
    if host.endswith(".{DOMAIN}"):
        data.server.address = ("127.0.0.1", port)
        if data.server.sni is None:
            data.server.sni = host
'''


def start_mitmdump(work, processes, http2=False):
    """mitmdump (MITMDUMP) on a free port with its own CA, verifying upstreams against the test
    root, *.DOMAIN sent to 127.0.0.1 by an addon; HTTP/2 on or off. Returns (its Proxy, None), or
    (None, why) when it is not installed or did not start."""
    if not MITMDUMP:
        return None, "mitmdump not found (make bench-venv installs mitmproxy into .build/bench-venv; or set MITMDUMP)"
    confdir = os.path.join(work, "mitm")
    os.makedirs(confdir)
    addon = os.path.join(work, "mitm_resolve.py")
    with open(addon, "w") as f:
        f.write(MITM_ADDON)
    port = free_port()
    argv = [MITMDUMP, "--listen-host", "127.0.0.1", "--listen-port", str(port), "-q",
            "--set", f"confdir={confdir}", "--set", f"ssl_verify_upstream_trusted_ca={work}/root.pem",
            "--set", "connection_strategy=eager", "--set", "stream_large_bodies=1m",
            "--set", f"http2={'true' if http2 else 'false'}", "-s", addon]
    process = processes.start("mitmdump", argv, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "mitmdump.err"), "w"))
    try:
        wait_for_port(port, "mitmdump", process, work, seconds=60)
    except Failure as failure:
        return None, f"mitmdump did not start: {failure}"
    cafile = os.path.join(confdir, "mitmproxy-ca-cert.pem")
    for _ in range(50):
        if os.path.exists(cafile):
            break
        time.sleep(0.1)
    version = subprocess.run([MITMDUMP, "--version"], capture_output=True, text=True, timeout=60).stdout.split("\n")[0]
    note = (f"{version.strip()}, its own CA (RSA-2048, made at first start in confdir), upstream verified against the "
            f"test root, http2={'true' if http2 else 'false'}, connection_strategy=eager, stream_large_bodies=1m, "
            f"an addon mapping *.{DOMAIN} to 127.0.0.1")
    return Proxy("mitmdump", port, process, cafile, note), None


# --- measuring ------------------------------------------------------------------------------------

def process_tree(root):
    """root and every descendant (squid runs a master and a kid; nginx-style trees in general)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def cpu_seconds(root):
    """(utime, stime) of the whole tree in seconds (dead threads of a live process are included)."""
    user = system = 0
    for pid in process_tree(root):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        user += int(fields[11])  # field 14 of proc(5)
        system += int(fields[12])  # field 15
    return user / CLOCK_TICKS, system / CLOCK_TICKS


def rss_kib(root):
    """Resident memory (VmRSS) of the whole tree, KiB."""
    total = 0
    for pid in process_tree(root):
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total


def open_fds(root):
    """Open file descriptors of the whole tree."""
    return _entries_in_tree(root, "fd")


def threads(root):
    """Threads of the whole tree."""
    return _entries_in_tree(root, "task")


def _entries_in_tree(root, directory):
    """The entries of /proc/PID/`directory` (fd, task) summed over the tree."""
    total = 0
    for pid in process_tree(root):
        try:
            total += len(os.listdir(f"/proc/{pid}/{directory}"))
        except OSError:
            continue
    return total


def run_parallel(count, concurrency, work, deadline=None):
    """Runs work(i) for i in range(count) on `concurrency` threads; returns (ok, errors, wall
    seconds): how many returned, and each failure as "Type: message". With a `deadline`
    (time.monotonic()), no work starts after it, and the threads are waited for until 5 s past it."""
    lock = threading.Lock()
    state = {"next": 0, "ok": 0, "errors": []}

    def worker():
        while deadline is None or time.monotonic() < deadline:
            with lock:
                i = state["next"]
                if i >= count:
                    return
                state["next"] = i + 1
            try:
                work(i)
                with lock:
                    state["ok"] += 1
            except Exception as error:  # noqa: BLE001 - every failure is counted and reported
                with lock:
                    state["errors"].append(f"{type(error).__name__}: {error}")

    started = time.monotonic()
    workers = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(timeout=None if deadline is None else max(0.0, deadline - time.monotonic()) + 5)
    return state["ok"], state["errors"], time.monotonic() - started


def count_alive(held):
    """How many of the held sockets are still open: one the proxy (or upstream) closed reads EOF at
    once; a live one would block. Leaves them non-blocking."""
    alive = 0
    for s in held:
        s.setblocking(False)
        try:
            alive += 1 if s.recv(1) else 0
        except (BlockingIOError, ssl.SSLWantReadError):
            alive += 1
        except OSError:
            pass
    return alive


def hold_idle(proxy, count, open_one, what, say):
    """Memory per idle connection through `proxy` (a Proxy, or anything with its name, pid and
    alive): `count` connections made by open_one() (which returns the open socket), 20 at a time,
    and held; the resident memory and descriptors of the proxy's process tree read 1 s before the
    first and 2 s after the last is open; then all closed, and 2 s left for the proxy to let them go.
    A Failure if one could not be opened (`what` names them) or the proxy exited. Says the figures
    and returns them: kib (growth per connection), before and after (KiB), fds_before, fds_after,
    alive (how many were still open), open_s (seconds to open them all)."""
    held, lock = [], threading.Lock()

    def open_held(_):
        sock = open_one()
        with lock:
            held.append(sock)

    time.sleep(1.0)
    rss_before, fds_before = rss_kib(proxy.pid), open_fds(proxy.pid)
    try:
        ok, errors, wall = run_parallel(count, 20, open_held)
        if errors:
            raise Failure(f"{proxy.name}: {len(errors)} of {count} {what} failed, first: {errors[0]}")
        time.sleep(2.0)
        rss_after, fds_after = rss_kib(proxy.pid), open_fds(proxy.pid)
        alive = count_alive(held)
    finally:
        for s in held:
            try:
                s.close()
            except OSError:
                pass
    proxy.alive("the idle phase")
    row = {"kib": (rss_after - rss_before) / count, "before": rss_before, "after": rss_after,
           "fds_before": fds_before, "fds_after": fds_after, "alive": alive, "open_s": wall}
    say(f"  {proxy.name}: {row['kib']:.1f} KiB per connection ({rss_before} -> {rss_after} KiB, "
        f"descriptors {fds_before} -> {fds_after}, {alive} of {count} still open)")
    time.sleep(2.0)  # the closed connections drain before the next proxy
    return row


def idle_lines(figures, width):
    """hold_idle's figures as table lines: a header, then a line per proxy in the order of
    `figures` ({name: hold_idle's dict}), the names padded to `width`."""
    lines = [f"   {'':{width}} {'KiB/conn':>8} {'RSS before':>11} {'RSS after':>10} {'fds':>12} {'alive':>6}"]
    for name, r in figures.items():
        lines.append(f"   {name:{width}} {r['kib']:8.1f} {r['before']:9d}Ki {r['after']:8d}Ki "
                     f"{r['fds_before']:>5}->{r['fds_after']:<6} {r['alive']:>6}")
    return lines


# --- clients --------------------------------------------------------------------------------------

def client_context(cafile):
    """A TLS client context (1.2 or later) that trusts `cafile` only and checks the name."""
    context = ssl.create_default_context(cafile=cafile)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def connect_tunnel(proxy, target, timeout=20):
    """A new connection to the proxy (host, port), TCP_NODELAY, that open_tunnel has made a tunnel
    to target (host, port)."""
    sock = socket.create_connection(proxy, timeout=timeout)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        open_tunnel(sock, target)
    except BaseException:
        sock.close()
        raise
    return sock


def open_tunnel(sock, target):
    """Sends CONNECT target (host, port) on `sock`, a connection to a proxy, and reads the answer's
    head; a ConnectionError unless it is 200 with no byte after it (the server's first bytes come
    only once the client has spoken)."""
    authority = f"{target[0]}:{target[1]}"
    sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
    head, after = read_head(sock, "proxy closed before answering CONNECT")
    status_line = head.split(b"\r\n", 1)[0]
    parts = status_line.split()
    if len(parts) < 2 or parts[1] != b"200":
        raise ConnectionError(f"CONNECT answered {status_line.decode(errors='replace')}")
    if after:
        raise ConnectionError("bytes after the CONNECT answer before the TLS handshake")


def read_head(sock, closed):
    """Reads an HTTP head from `sock` up to its blank line: (the head, the bytes read after it). A
    ConnectionError, `closed` and what came, if the peer closes first; another if the head passes
    64 KiB."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"{closed} ({data[:80]!r})")
        data += chunk
        if len(data) > 65536:
            raise ConnectionError(f"HTTP head too long ({data[:80]!r})")
    head, _, after = data.partition(b"\r\n\r\n")
    return head, after


def tls_through(sock, context, server_name):
    """TLS over `sock` (a tunnel) as a client of server_name, the handshake done."""
    tls = context.wrap_socket(sock, server_hostname=server_name, do_handshake_on_connect=False)
    tls.do_handshake()
    return tls


def curl_download(url, cafile, proxy=None, resolve=None, timeout=120):
    """curl downloads url to /dev/null trusting `cafile`, through the proxy (host, port) if given,
    with curl's --resolve `resolve` if given: (bytes, bytes per second). A Failure if curl fails."""
    argv = ["curl", "-sS", "--fail", "--cacert", cafile, "-o", "/dev/null", "-w", "%{size_download} %{speed_download}",
            "--max-time", str(timeout)]
    if proxy:
        argv += ["--proxy", f"http://{proxy[0]}:{proxy[1]}"]
    if resolve:
        argv += ["--resolve", resolve]
    out = subprocess.run(argv + [url], capture_output=True, text=True, timeout=timeout + 10)
    if out.returncode != 0:
        raise Failure(f"curl {url} via {proxy}: {out.stderr.strip()}")
    size, speed = out.stdout.split()
    return int(size), float(speed)


# --- the report -----------------------------------------------------------------------------------

def cpu_model():
    """The machine's CPU as /proc/cpuinfo names it, or "?"."""
    with open("/proc/cpuinfo") as f:
        return next((l.split(": ", 1)[1].strip() for l in f if l.startswith("model name")), "?")


def goal_lines(rows, label_width, goal_width):
    """The goals table: a line per (label, figure, goal, verdict) row, indented 3, the label and
    the goal padded to the widths given, the figure to the widest figure."""
    width = max(len(r[1]) for r in rows)
    return [f"   {label:{label_width}} {figure:{width}}  goal {goal:{goal_width}} {verdict}"
            for label, figure, goal, verdict in rows]


def goal_count(rows):
    """The verdicts of (label, figure, goal, verdict) rows counted: "goals met N, missed N, skipped N"."""
    count = {v: sum(1 for r in rows if r[3] == v) for v in ("PASS", "FAIL", "SKIP")}
    return f"goals met {count['PASS']}, missed {count['FAIL']}, skipped {count['SKIP']}"
