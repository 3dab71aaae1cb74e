#!/usr/bin/env python3
"""make soak: the release atsproxy under mixed, hostile load for SOAK_SECONDS, with reloads, log
rotations and cache flushes under way, then checks that it held (docs/development.md, "Soak").

Python standard library only. Everything runs on 127.0.0.1 in a scratch directory under .build/soak:
the upstreams (upstreams.py), the daemon in intercept mode with *.tun.soak.test passed through (so
both judged tunnels and intercepted requests happen), and WORKERS client threads running the
operations of clients.py. Each check prints PASS or FAIL with its numbers; any FAIL exits 1.

Environment: SOAK_SECONDS (120), ATSPROXY and ATSPROXYCTL (the release binaries of this checkout),
SOAK_SEED (1: the operations each worker picks, and their sizes), KEEP=1 keeps the scratch directory.
"""

import collections
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import clients  # noqa: E402
import fixture  # noqa: E402
import loglines  # noqa: E402

SECONDS = float(os.environ.get("SOAK_SECONDS", "120"))
ATSPROXY = os.environ.get("ATSPROXY", os.path.join(TOP, ".build", "release", "atsproxy"))
ATSPROXYCTL = os.environ.get("ATSPROXYCTL", os.path.join(TOP, ".build", "release", "atsproxyctl"))
SEED = int(os.environ.get("SOAK_SEED", "1"))
KEEP = os.environ.get("KEEP") == "1"
WORKERS = 6
WARMUP_SECONDS = 10
MAINTENANCE_INTERVAL = 2.0  # a reload, a rotation or a flush every this many seconds
GRACE_SECONDS = 30  # after the load, for the daemon to close what is still open
# RSS at the end may exceed RSS after warm-up by this much: glibc's malloc keeps freed memory in
# per-thread arenas, so the high-water mark of a burst (6 clients moving up to 3 MiB each through
# 512-KiB relay buffers) can stay resident; a leak per connection (thousands of them) exceeds it.
RSS_SLACK_KIB = 16 * 1024
RSS_SLACK_RATIO = 0.25


def say(message):
    print(f"soak: {message}", flush=True)


class Results:
    """The checks' verdicts, printed as they come."""

    def __init__(self):
        self.failed = []

    def check(self, name, passed, numbers):
        print(f"{'PASS' if passed else 'FAIL'}  {name}: {numbers}", flush=True)
        if not passed:
            self.failed.append(name)


# --- load ---------------------------------------------------------------------------------------------

class Load:
    """WORKERS threads, each running random operations (clients.OPERATIONS, by weight) until stopped."""

    def __init__(self, client):
        self.client = client
        self.ops = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = []
        self.round = 0

    def start(self):
        self.stop.clear()
        self.round += 1
        # Daemon threads: a worker stuck past every deadline fails the run (finish) instead of hanging it.
        self.threads = [threading.Thread(target=self.work, args=(random.Random(f"{SEED}/{self.round}/{index}"),),
                                         daemon=True)
                        for index in range(WORKERS)]
        for thread in self.threads:
            thread.start()

    def work(self, rng):
        operations, weights = zip(*clients.OPERATIONS)
        while not self.stop.is_set():
            op = clients.run(self.client, rng, rng.choices(operations, weights)[0])
            with self.lock:
                self.ops.append(op)

    def finish(self):
        """Stops the workers once their operations end (each has its own deadline)."""
        self.stop.set()
        for thread in self.threads:
            thread.join(clients.DEADLINE * 2)
        return not any(thread.is_alive() for thread in self.threads)


class Maintenance:
    """Every MAINTENANCE_INTERVAL: a reload that flips the policy (atsproxyctl reload, or SIGHUP and
    its line on stderr), a log rotation (rename, then atsproxyctl reopen-logs), or a flush-cache, in
    turn. Counts each, and every one that did not succeed."""

    def __init__(self, daemon, policy):
        self.daemon = daemon
        self.policy = policy
        self.counts = collections.Counter()
        self.errors = []
        self.flip_allowed = True
        self.stop = threading.Event()
        self.thread = None
        self.step = 0

    def start(self):
        self.stop.clear()
        self.thread = threading.Thread(target=self.loop)
        self.thread.start()

    def finish(self):
        self.stop.set()
        self.thread.join()

    def loop(self):
        while not self.stop.wait(MAINTENANCE_INTERVAL):
            action = ["reload", "rotate", "flush", "sighup", "rotate", "flush"][self.step % 6]
            self.step += 1
            getattr(self, action)()

    def control(self, name, command):
        status, output = self.daemon.control(command)
        self.counts[name] += 1
        if status != 0:
            self.errors.append(f"{command} exited {status}: {output.strip()}")

    def flip(self):
        self.flip_allowed = not self.flip_allowed
        fixture.write_policy(self.policy, self.flip_allowed)

    def reload(self):
        self.flip()
        self.control("reloads", "reload")

    def sighup(self):
        self.flip()
        before = self.daemon.stderr().count("reloaded (SIGHUP)")
        os.kill(self.daemon.pid, signal.SIGHUP)
        self.counts["reloads"] += 1
        deadline = time.monotonic() + 10
        while self.daemon.stderr().count("reloaded (SIGHUP)") == before:
            if time.monotonic() > deadline:
                self.errors.append("no 'reloaded (SIGHUP)' line on stderr 10 s after SIGHUP")
                return
            time.sleep(0.05)

    def rotate(self):
        os.rename(self.daemon.log, f"{self.daemon.log}.{self.counts['rotations'] + 1}")
        self.control("rotations", "reopen-logs")

    def flush(self):
        self.control("cache flushes", "flush-cache")


def quiesce(daemon):
    """Waits (up to GRACE_SECONDS) for the daemon to have no connection open: True when it has none."""
    deadline = time.monotonic() + GRACE_SECONDS
    while daemon.stats()["connections"]["active"] != 0:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    time.sleep(1)  # closes finish, loops settle
    return daemon.stats()["connections"]["active"] == 0


def resources(daemon):
    return {"fds": daemon.fds(), "threads": daemon.threads(), "rss_kib": daemon.status_field("VmRSS")}


# --- checks -------------------------------------------------------------------------------------------

def check_operations(results, ops, finished):
    """Every operation got an answer it recognises (a response, a block, the documented error for a
    hostile case) and none outlived its deadline; the transfers among them (SHA-256 both ways through
    tunnels, bodies compared byte for byte through the proxy) all matched."""
    table = collections.Counter((op.kind, op.outcome) for op in ops)
    for (kind, outcome), count in sorted(table.items()):
        print(f"      {kind:26} {outcome:22} {count:6}")
    bad = [op for op in ops if not op.ok]
    for op in bad[:10]:
        print(f"      failed: {op.kind}: {op.outcome}: {op.detail}")
    hung = sum(1 for op in bad if op.outcome == "hung")
    results.check("every operation answered", not bad and finished,
                  f"{len(ops)} operations, {len(bad)} failed, {hung} hung past {clients.DEADLINE:.0f} s, "
                  f"workers all stopped: {finished}")
    transfers = [op for op in ops if op.bytes]
    mismatched = [op for op in bad if op.detail.startswith("Mismatch")]
    results.check("transfers byte-exact", not mismatched,
                  f"{len(transfers)} operations moved {sum(op.bytes for op in transfers) / 1048576:.0f} MiB "
                  f"(both ways, checked), {len(mismatched)} differed")


def check_log(results, daemon, ops, accepted):
    """One valid line per connection the daemon accepted: every line (across the rotated files) is a
    whole JSON object with the documented fields; connection ids are unique and cover every accepted
    connection but those the docs give no line (a client that leaves before a whole head); each
    line the clients are owed is there, with nothing left over; request lines match requests made."""
    lines, torn, files = loglines.read(daemon.log)
    field_problems = [problem for line in lines for problem in loglines.field_problems(line)]
    results.check("log lines whole and valid", not torn and not field_problems,
                  f"{len(lines)} lines in {files} files, {len(torn)} torn or not JSON, "
                  f"{len(field_problems)} field problems {(torn + field_problems)[:3]}")
    good = [line for line in lines if not loglines.field_problems(line)]
    id_problems, ids = loglines.check_ids(good)
    unlogged = sum(1 for op in ops if op.kind == "dropped_early")
    results.check("connection ids unique, one per accepted connection", not id_problems
                  and len(ids) == accepted - unlogged and max(ids, default=0) <= accepted,
                  f"{len(ids)} ids (highest {max(ids, default=0)}) for {accepted} accepted connections, "
                  f"{unlogged} of them owed no line (left before a head); {id_problems[:3]}")
    missing, extra = loglines.match_connections(good, ops)
    by_kind = collections.Counter(("CONNECT " + (line["inspect"] or "unjudged")) if line["method"] == "CONNECT"
                                  else "http://" if line["method"] != "-" else "refused head"
                                  for line in good if line["kind"] == "connection")
    results.check("every client connection's line, and no other", not missing and not extra,
                  f"connection lines by kind {dict(sorted(by_kind.items()))}; {len(missing)} missing "
                  f"{missing[:3]}, {len(extra)} unexpected {extra[:3]}")
    request_lines = sum(1 for line in good if line["kind"] == "request")
    intercepted = sum(count or 0 for op in ops for _, count in op.intercepted)
    plain = sum(1 for line in good if line["kind"] == "connection" and line["method"] not in ("CONNECT", "-"))
    plain_made = sum(1 for op in ops for expected in op.expected if expected[1] not in ("CONNECT", "-"))
    results.check("request lines match the requests made", request_lines == intercepted and plain == plain_made,
                  f"{request_lines} request lines for {intercepted} intercepted requests; "
                  f"{plain} http:// lines for {plain_made} http:// requests")
    return len(lines), request_lines + plain


def run(results, work, processes):
    say(f"{SECONDS:.0f} s, {WORKERS} workers, seed {SEED}, in {work}")
    fixture.make_certificates(work, ATSPROXYCTL)
    hosts = fixture.write_hosts(work)
    policy = os.path.join(work, "policy.plist")
    fixture.write_policy(policy, flip_allowed=True)
    ports = fixture.start_upstreams(processes, work)
    daemon = fixture.Daemon(processes, work, ATSPROXY, ATSPROXYCTL, hosts, policy)
    client = clients.Client(daemon.port, ports, fixture.NAMES, os.path.join(work, "root.pem"),
                            os.path.join(work, "ca", "ca.pem"))
    load, maintenance = Load(client), Maintenance(daemon, policy)

    say(f"warm-up, {WARMUP_SECONDS} s")
    load.start()
    maintenance.start()
    time.sleep(WARMUP_SECONDS)
    finished = load.finish()
    maintenance.finish()
    idle = quiesce(daemon)
    baseline = resources(daemon)
    say(f"after warm-up: {baseline} ({len(load.ops)} operations); soak, {SECONDS:.0f} s")

    started = time.monotonic()
    load.start()
    maintenance.start()
    time.sleep(SECONDS)
    finished = load.finish() and finished
    maintenance.finish()
    soaked = time.monotonic() - started
    idle = quiesce(daemon) and idle
    end = resources(daemon)
    stats = daemon.stats()
    say(f"at the end: {end}")

    check_operations(results, load.ops, finished)
    made = sum(op.connections for op in load.ops)
    accepted = stats["connections"]["total"]
    results.check("daemon accepted every client connection, none left open",
                  accepted == made and idle and stats["connections"]["active"] == 0,
                  f"clients made {made}, daemon accepted {accepted}, open after {GRACE_SECONDS} s grace: "
                  f"{stats['connections']['active']}")
    results.check("maintenance all succeeded", not maintenance.errors,
                  f"{dict(maintenance.counts)}; errors {maintenance.errors[:3]}")
    results.check("descriptors back to baseline", end["fds"] == baseline["fds"],
                  f"baseline {baseline['fds']}, end {end['fds']}")
    results.check("threads back to baseline", end["threads"] == baseline["threads"],
                  f"baseline {baseline['threads']}, end {end['threads']}")
    bound = baseline["rss_kib"] + max(RSS_SLACK_KIB, int(baseline["rss_kib"] * RSS_SLACK_RATIO))
    results.check("RSS within bound", end["rss_kib"] <= bound,
                  f"after warm-up {baseline['rss_kib'] / 1024:.1f} MiB, end {end['rss_kib'] / 1024:.1f} MiB, "
                  f"bound {bound / 1024:.1f} MiB (+max(16 MiB, 25%))")
    status, output = daemon.control("status")
    results.check("atsproxyctl status answers", status == 0 and "Connections:" in output, f"exit {status}")

    os.kill(daemon.pid, signal.SIGTERM)
    try:
        code = daemon.process.wait(timeout=30)
    except Exception:  # noqa: BLE001  (subprocess.TimeoutExpired: reported as the check's failure)
        code = None
    stderr = daemon.stderr()
    crash = [line for line in stderr.splitlines()
             if re.search(r"Sanitizer|Fatal error|Segmentation|Illegal instruction|panic|backtrace|Abort", line)]
    results.check("clean exit on SIGTERM", code == 0 and not crash,
                  f"exit status {code}, {len(crash)} crash lines on stderr {crash[:2]}")

    lines, requests = check_log(results, daemon, load.ops, accepted)
    counts = maintenance.counts
    print()
    print(f"soak summary: {soaked:.0f} s after a {WARMUP_SECONDS}-s warm-up (the counts include it): "
          f"{accepted} connections, {requests} requests, {lines} log lines, "
          f"{counts['reloads']} reloads, {counts['rotations']} rotations, {counts['cache flushes']} cache flushes")
    print(f"soak summary: RSS {baseline['rss_kib'] / 1024:.1f} MiB after warm-up, {end['rss_kib'] / 1024:.1f} MiB "
          f"at the end; fds {baseline['fds']} -> {end['fds']}; threads {baseline['threads']} -> {end['threads']}")


def main():
    results = Results()
    os.makedirs(os.path.join(TOP, ".build", "soak"), exist_ok=True)
    work = tempfile.mkdtemp(prefix="run-", dir=os.path.join(TOP, ".build", "soak"))
    processes = fixture.Processes()
    try:
        run(results, work, processes)
    finally:
        processes.stop_all()
        if KEEP or results.failed:
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if results.failed:
        say(f"FAILED: {', '.join(results.failed)}")
        sys.exit(1)
    say("all checks passed")


if __name__ == "__main__":
    main()
