"""Reading the daemon's JSON log back (every rotated file and the current one) and checking it
against the fields docs/log-format.md and docs/request-log.md name, and against what the clients did."""

import collections
import glob
import json
import re

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
ACTIONS = {"allowed", "blocked", "failed", "denied"}
STR, INT, BOOL, LIST, DICT, NULL = str, int, bool, list, dict, type(None)

# Each field docs/log-format.md names for a connection line, with the types it may have.
CONNECTION_FIELDS = {
    "ts": (STR,), "client": (STR,), "method": (STR,), "scheme": (STR,), "host": (STR,), "port": (INT,),
    "sni": (STR, NULL), "rule": (DICT, NULL), "compliant": (BOOL,), "action": (STR,), "violations": (LIST,),
    "error": (DICT, NULL), "explanations": (LIST,), "sni_check": (DICT, NULL), "tunnel": (STR, NULL),
    "hello_unreadable": (STR, NULL), "tls": (DICT, NULL), "observed": (DICT, NULL), "status": (INT, NULL),
    "upstream": (STR, NULL), "upstream_error": (STR, NULL), "bytes_up": (INT,), "bytes_down": (INT,),
    "duration_ms": (INT,),
    # intercept mode's (docs/request-log.md, first table)
    "kind": (STR,), "connection_id": (INT,), "inspect": (STR, NULL), "passthrough": (STR, NULL),
    "intercept_failed": (STR, NULL), "client_alert": (STR, NULL), "requests": (INT, NULL),
    "upstream_resumed": (BOOL, NULL),
    # why upstream_error is set, as a code (docs/log-format.md)
    "failure": (STR, NULL),
    # where the time before the first relayed byte went (docs/log-format.md)
    "timing": (DICT, NULL),
    # which app the User-Agent named (docs/log-format.md, "Which app")
    "app": (DICT, NULL),
    # how the connection reached the proxy (docs/log-format.md, docs/capture.md)
    "capture": (STR,), "original_destination": (STR, NULL), "server_name_mismatch": (STR, NULL),
}
# Each field docs/request-log.md names for a request line.
REQUEST_FIELDS = {
    "ts": (STR,), "kind": (STR,), "connection_id": (INT,), "client": (STR,), "host": (STR,), "port": (INT,),
    "sni": (STR, NULL), "upstream": (STR, NULL), "method": (STR,), "url": (STR,), "http_version": (STR,),
    "status": (INT, NULL), "status_text": (STR, NULL), "content_type": (STR, NULL),
    "request_body_bytes": (INT,), "response_body_bytes": (INT,), "request_head_bytes": (INT,),
    "response_head_bytes": (INT,), "send_ms": (INT,), "ttfb_ms": (INT, NULL), "duration_ms": (INT,),
    "reused": (BOOL,), "compliant": (BOOL,), "action": (STR,), "rule": (DICT, NULL), "violations": (LIST,),
    "error": (DICT, NULL), "upstream_error": (STR, NULL), "upgrade": (STR, NULL),
    "request_headers": (LIST, NULL), "response_headers": (LIST, NULL),
    # the connection's key-exchange group, as its line's tls.group
    "tls_group": (DICT, NULL),
    # which app made the request (docs/request-log.md)
    "app": (DICT, NULL),
}


def read(log_path):
    """(lines, problems): every line of log_path's rotated files (log_path.1, .2, …) and of log_path
    itself, parsed; a file not ending in a newline, or a line that is not a JSON object, is a problem."""
    paths = sorted(glob.glob(log_path + ".*"), key=lambda p: int(p.rsplit(".", 1)[1])) + [log_path]
    lines, problems = [], []
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        if data and not data.endswith(b"\n"):
            problems.append(f"{path} does not end with a newline")
        for number, raw in enumerate(data.splitlines(), 1):
            try:
                line = json.loads(raw)
                if not isinstance(line, dict):
                    raise ValueError("not an object")
                lines.append(line)
            except ValueError as error:
                problems.append(f"{path}:{number}: {error}: {raw[:80]!r}")
    return lines, problems, len(paths)


def field_problems(line):
    """What is wrong with one line's fields, by its kind: missing fields, wrong types, a bad ts or action."""
    kind = line.get("kind")
    fields = CONNECTION_FIELDS if kind == "connection" else REQUEST_FIELDS if kind == "request" else None
    if fields is None:
        return [f"unexpected kind {kind!r}"]
    problems = []
    for name, types in fields.items():
        if name not in line:
            problems.append(f"{kind} line without {name}")
        elif type(line[name]) not in types:
            problems.append(f"{kind} line's {name} is {type(line[name]).__name__}")
    if isinstance(line.get("ts"), str) and not TS.match(line["ts"]):
        problems.append(f"ts {line['ts']!r}")
    if line.get("action") not in ACTIONS:
        problems.append(f"action {line.get('action')!r}")
    return problems


def client_port(line):
    return int(line["client"].rsplit(":", 1)[1])


def match_connections(lines, ops):
    """Pairs each connection line the clients are owed (clients.Op.expected) with one the daemon wrote,
    by client port, method, host and action (and failure, when the client names one), and for an intercepted connection the number of requests
    the client made on it: (unmatched expected, unmatched lines). A port the kernel gave twice holds
    both operations' lines."""
    written = collections.defaultdict(list)
    for line in lines:
        if line["kind"] == "connection":
            written[client_port(line)].append(line)
    missing = []
    for op in ops:
        intercepted = dict(op.intercepted)
        for port, method, host, actions, *failure in op.expected:
            candidates = written.get(port, [])
            found = next((line for line in candidates if line["method"] == method and line["host"] == host
                          and line["action"] in actions and (not failure or line["failure"] == failure[0])
                          and (port not in intercepted or (line["requests"] or 0) == intercepted[port])), None)
            if found is None:
                missing.append(f"{op.kind}: port {port} {method} {host} {sorted(actions)} {failure}")
            else:
                candidates.remove(found)
    extra = [f"{line['client']} {line['method']} {line['host']} {line['action']}"
             for remaining in written.values() for line in remaining]
    return missing, extra


def check_ids(lines):
    """connection_id: unique among CONNECT and refused-request lines; shared by the lines of one plain
    keep-alive connection only (same client); every request line's connection is an intercepted
    CONNECT line whose `requests` equals its request lines. Returns (problems, ids seen)."""
    problems = []
    by_id = collections.defaultdict(list)
    for line in lines:
        if line["kind"] == "connection":
            by_id[line["connection_id"]].append(line)
    for connection_id, group in by_id.items():
        if len(group) > 1 and (any(line["method"] in ("CONNECT", "-") for line in group)
                               or len({line["client"] for line in group}) > 1):
            problems.append(f"connection_id {connection_id} on {len(group)} lines: "
                            f"{[(line['client'], line['method']) for line in group]}")
    requests = collections.Counter(line["connection_id"] for line in lines if line["kind"] == "request")
    for connection_id, count in requests.items():
        owner = by_id.get(connection_id, [])
        if len(owner) != 1 or owner[0]["inspect"] != "intercept" or owner[0]["requests"] != count:
            problems.append(f"{count} request lines for connection {connection_id}, whose line says "
                            f"{[(line['inspect'], line['requests']) for line in owner]}")
    for connection_id, group in by_id.items():
        line = group[0]
        if line["inspect"] == "intercept" and (line["requests"] or 0) != requests.get(connection_id, 0):
            problems.append(f"connection {connection_id} says {line['requests']} requests, "
                            f"{requests.get(connection_id, 0)} request lines")
    return problems, set(by_id)
