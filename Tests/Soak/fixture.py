"""The soak's fixture: certificates, policies, hosts file, the upstream process and the daemon.

Everything lives in one scratch directory; every process started here is stopped by Processes.stop_all.
"""

import json
import os
import signal
import socket
import subprocess
import time

DOMAIN = "soak.test"
# Names the daemon resolves through --hosts-file, every one to 127.0.0.1 (dotted names: ATS exempts
# single-label and loopback hosts, and these must be judged). Hosts under TUNNEL are --passthrough
# (relayed as judged tunnels); the others are intercepted.
TUNNEL = f"tun.{DOMAIN}"
NAMES = {
    "hash": f"hash.{TUNNEL}", "reset": f"reset.{TUNNEL}", "old": f"old.{TUNNEL}",
    "selfsigned": f"selfsigned.{TUNNEL}", "silent": f"silent.{TUNNEL}", "drip": f"drip.{TUNNEL}",
    "web": f"web.{DOMAIN}", "selfsigned-icpt": f"selfsigned.{DOMAIN}",
    "plain": f"plain.{DOMAIN}", "flip": f"flip.{DOMAIN}",
}

POLICY_HEAD = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0"><dict><key>NSAppTransportSecurity</key><dict><key>NSExceptionDomains</key><dict>
"""
INSECURE = "<dict><key>NSExceptionAllowsInsecureHTTPLoads</key><true/></dict>\n"


def policy_text(flip_allowed):
    """The policy the reloads alternate: plain.soak.test always accepts cleartext; flip.soak.test
    only in the policy with `flip_allowed` (so a plain request to it is relayed, or refused with 403)."""
    domains = f"<key>{NAMES['plain']}</key>{INSECURE}"
    if flip_allowed:
        domains += f"<key>{NAMES['flip']}</key>{INSECURE}"
    return POLICY_HEAD + domains + "</dict></dict></dict></plist>\n"


def write_policy(path, flip_allowed):
    """Replaces the policy file at once (rename), so a reload never reads half of it."""
    with open(path + ".new", "w") as f:
        f.write(policy_text(flip_allowed))
    os.replace(path + ".new", path)


def make_certificates(work, atsproxyctl):
    """root.pem (the daemon's --ca-file), chain.pem/leaf.key (every compliant upstream), self.pem/self.key
    (the self-signed one), and the interception CA in ca/ (atsproxyctl ca init)."""
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=work, check=True, timeout=60,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-sha256", "-nodes",
            "-days", "30", "-subj", "/CN=soak root", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-keyout", "root.key", "-out", "root.pem")
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "leaf.key")
    openssl("req", "-new", "-key", "leaf.key", "-subj", f"/CN={DOMAIN}", "-out", "leaf.csr")
    with open(os.path.join(work, "leaf.ext"), "w") as f:
        f.write(f"subjectAltName=DNS:*.{DOMAIN},DNS:*.{TUNNEL}\nextendedKeyUsage=serverAuth\n"
                "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n")
    openssl("x509", "-req", "-in", "leaf.csr", "-CA", "root.pem", "-CAkey", "root.key", "-CAcreateserial",
            "-sha256", "-days", "30", "-extfile", "leaf.ext", "-out", "leaf.pem")
    with open(os.path.join(work, "chain.pem"), "w") as out:
        for name in ("leaf.pem", "root.pem"):
            with open(os.path.join(work, name)) as f:
                out.write(f.read())
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-sha256", "-nodes",
            "-days", "30", "-subj", f"/CN=*.{DOMAIN}",
            "-addext", f"subjectAltName=DNS:*.{DOMAIN},DNS:*.{TUNNEL}", "-addext", "extendedKeyUsage=serverAuth",
            "-keyout", "self.key", "-out", "self.pem")
    subprocess.run([atsproxyctl, "ca", "init", "--dir", os.path.join(work, "ca")], check=True, timeout=60,
                   stdout=subprocess.DEVNULL)


def write_hosts(work):
    path = os.path.join(work, "hosts")
    with open(path, "w") as f:
        f.write("127.0.0.1 " + " ".join(NAMES.values()) + "\n")
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Processes:
    """The child processes, each in a group of its own, stopped together at the end."""

    def __init__(self):
        self.started = []

    def start(self, argv, **kwargs):
        process = subprocess.Popen(argv, start_new_session=True, **kwargs)
        self.started.append(process)
        return process

    def stop_all(self):
        for process in reversed(self.started):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


def start_upstreams(processes, work):
    """The upstream process (upstreams.py): returns {role: port}."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "upstreams.py")
    process = processes.start(["python3", "-B", script, "--dir", work], stdout=subprocess.PIPE,
                              stderr=open(os.path.join(work, "upstreams.err"), "w"))
    line = process.stdout.readline()
    if not line:
        raise RuntimeError("upstreams.py exited at start-up; see upstreams.err")
    return json.loads(line)


class Daemon:
    """The release atsproxy in intercept mode on a free port, with its control socket and log in `work`.
    The head timeout is 4 s (the hostile heads' operations wait for it); the connect and handshake
    timeouts keep their 10-s default, so that a compliant upstream slowed by a busy machine is not
    judged a stalled one."""

    def __init__(self, processes, work, atsproxy, atsproxyctl, hosts, policy):
        self.atsproxyctl = atsproxyctl
        self.port = free_port()
        self.socket = os.path.join(work, "control.sock")
        self.log = os.path.join(work, "atsproxy.log")
        self.stderr_path = os.path.join(work, "atsproxy.err")
        argv = [atsproxy, "--listen", f"127.0.0.1:{self.port}", "--policy", policy, "--hosts-file", hosts,
                "--ca-file", os.path.join(work, "root.pem"), "--system-roots", "off",
                "--inspect", "intercept", "--ca-dir", os.path.join(work, "ca"), "--passthrough", f"*.{TUNNEL}",
                "--control-socket", self.socket, "--log-file", self.log, "--web-listen", "off",
                "--threads", "2", "--head-timeout", "4", "--shutdown-timeout", "5"]
        env = {k: v for k, v in os.environ.items() if k != "NOTIFY_SOCKET"}
        self.process = processes.start(argv, stdout=subprocess.DEVNULL, stderr=open(self.stderr_path, "w"), env=env)
        self.pid = self.process.pid
        deadline = time.monotonic() + 30
        while "atsproxy listening on" not in self.stderr():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"atsproxy did not start: {self.stderr()}")
            time.sleep(0.05)

    def stderr(self):
        with open(self.stderr_path, errors="replace") as f:
            return f.read()

    def control(self, command, *extra):
        """`atsproxyctl COMMAND --socket S [extra]`: (exit status, output); status None after 30 s unanswered."""
        try:
            done = subprocess.run([self.atsproxyctl, command, "--socket", self.socket, *extra], capture_output=True,
                                  text=True, timeout=30)
        except subprocess.TimeoutExpired:
            return None, f"atsproxyctl {command}: no answer in 30 s"
        return done.returncode, done.stdout + done.stderr

    def stats(self):
        status, out = self.control("stats", "--json")
        if status != 0:
            raise RuntimeError(f"atsproxyctl stats exited {status}: {out}")
        return json.loads(out)

    def status_field(self, field):
        """A /proc/PID/status field in kB (VmRSS)."""
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        raise RuntimeError(f"no {field} in /proc/{self.pid}/status")

    def fds(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def threads(self):
        return len(os.listdir(f"/proc/{self.pid}/task"))
