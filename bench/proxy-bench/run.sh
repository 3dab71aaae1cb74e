#!/usr/bin/env bash
# atsproxy against squid and tinyproxy as CONNECT proxies, with nginx as the TLS upstream, all on
# 127.0.0.1. See README.md in this directory for what is measured and how to read the table.
#
# Environment (all optional):
#   ATSPROXY     the atsproxy binary        (default: .build/release/atsproxy of this checkout)
#   SIZE_MIB     bulk download size, MiB    (default 512)
#   REPS         bulk repetitions per proxy (default 5; the median is reported)
#   REQUESTS     short requests per round   (default 1000)
#   ROUNDS       rounds of them per proxy   (default 3; the median round is reported)
#   TUNNELS      idle tunnels per proxy     (default 1000)
#   CONCURRENCY  client threads             (default 8)
#   CONCURRENCY2 client threads of the second CPU-per-request mode (default 50; 0 skips it)
#   THREADS      atsproxy --threads         (default: the number of cores)
#   KEEP=1       keep the scratch directory (configs, logs) and print its path
#   HOLD=1       start the servers, print their ports and PIDs, measure nothing and wait for Ctrl-C
#                (for profiling one proxy by hand)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
ATSPROXY=${ATSPROXY:-$top/.build/release/atsproxy}
SIZE_MIB=${SIZE_MIB:-512}
REPS=${REPS:-5}
REQUESTS=${REQUESTS:-1000}
ROUNDS=${ROUNDS:-3}
TUNNELS=${TUNNELS:-1000}
CONCURRENCY=${CONCURRENCY:-8}
CONCURRENCY2=${CONCURRENCY2:-50}
THREADS=${THREADS:-$(nproc)}
PYTHON=${PYTHON:-python3}

say() { printf 'proxy-bench: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# --- what is needed -------------------------------------------------------------------------------

need() {  # need COMMAND DEBIAN-PACKAGE
  command -v "$1" >/dev/null 2>&1 && return 0
  local path
  for path in /usr/sbin /sbin; do [ -x "$path/$1" ] && { PATH="$PATH:$path"; return 0; }; done
  die "$1 not found: install it with 'apt-get install $2' (or run 'make bench-proxy', which does)"
}
need curl curl
need openssl openssl
need "$PYTHON" python3
need nginx nginx
need squid squid-openssl
need tinyproxy tinyproxy-bin
[ -x "$ATSPROXY" ] || die "no atsproxy binary at $ATSPROXY: build it with 'swift build -c release --product atsproxy' or set ATSPROXY"

# Each tunnel costs a proxy two descriptors and the client one (two while the handshake runs).
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
nofile=$(ulimit -n)
[ "$nofile" = unlimited ] || [ "$nofile" -ge $((TUNNELS * 3 + 200)) ] ||
  die "open-file limit $(ulimit -n) is too low for TUNNELS=$TUNNELS; raise the hard limit or lower TUNNELS"

# --- scratch directory and clean-up ---------------------------------------------------------------

work=$(mktemp -d "${TMPDIR:-/tmp}/proxy-bench.XXXXXX")
chmod 755 "$work"   # nginx workers and squid drop to unprivileged users when started as root
pids=()
cleanup() {
  local status=$? pid tree
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do
    # The process and its descendants (squid's kid, nginx's workers).
    tree=$(descendants "$pid")
    kill -TERM $tree 2>/dev/null || true
  done
  for _ in $(seq 30); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do
    tree=$(descendants "$pid")
    kill -KILL $tree 2>/dev/null || true
  done
  wait 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ]; then say "kept $work"; else rm -rf "$work"; fi
  exit $status
}
descendants() {  # PID and all its descendants, children first
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do descendants "$child"; done
  echo "$1"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_for_port() {  # wait_for_port PORT NAME PID
  for _ in $(seq 100); do
    kill -0 "$3" 2>/dev/null || { tail -n 20 "$work/$2.err" >&2 2>/dev/null; die "$2 exited at start-up (log above)"; }
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  die "$2 did not listen on 127.0.0.1:$1 within 10 s"
}

# --- certificates: a root and an ATS-compliant leaf for localhost ---------------------------------

say "scratch directory $work"
(
  cd "$work"
  openssl req -x509 -newkey rsa:2048 -sha256 -nodes -days 30 -subj "/CN=proxy-bench root" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
    -keyout root.key -out root.pem 2>/dev/null
  openssl req -new -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout leaf.key -out leaf.csr 2>/dev/null
  printf '%s\n' "subjectAltName=DNS:localhost" "extendedKeyUsage=serverAuth" "basicConstraints=CA:FALSE" \
    "keyUsage=critical,digitalSignature,keyEncipherment" > leaf.ext
  openssl x509 -req -in leaf.csr -CA root.pem -CAkey root.key -CAcreateserial -sha256 -days 30 \
    -extfile leaf.ext -out leaf.pem 2>/dev/null
  cat leaf.pem root.pem > chain.pem
  chmod 644 ./*.key
) || die "openssl could not make the certificates"

# --- nginx: the TLS upstream ----------------------------------------------------------------------

mkdir -p "$work/www" "$work/nginx"
truncate -s "${SIZE_MIB}M" "$work/www/big"     # sparse: served from the page cache, no disk
head -c 1024 /dev/zero | tr '\0' 'x' > "$work/www/small"
upstream_port=$(free_port)
cat > "$work/nginx.conf" <<EOF
worker_processes $(nproc);
worker_rlimit_nofile ${nofile/unlimited/65536};
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx.err error;
events { worker_connections 16384; }
http {
    access_log off;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;
    client_header_timeout 600s;
    keepalive_timeout 600s;
    server {
        listen 127.0.0.1:$upstream_port ssl;
        server_name localhost;
        ssl_certificate $work/chain.pem;
        ssl_certificate_key $work/leaf.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        root $work/www;
    }
}
EOF
nginx -p "$work/nginx" -c "$work/nginx.conf" -e "$work/nginx.err" 2>>"$work/nginx.err" &
nginx_pid=$!; pids+=("$nginx_pid")
wait_for_port "$upstream_port" nginx "$nginx_pid"

# --- atsproxy: full ATS for localhost, the bench root as a user-installed anchor --------------------

cat > "$work/policy.plist" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0">
<dict>
	<key>NSAppTransportSecurity</key>
	<dict>
		<key>NSExceptionDomains</key>
		<dict>
			<key>localhost</key>
			<dict/>
		</dict>
	</dict>
</dict>
</plist>
EOF
ats_port=$(free_port)
"$ATSPROXY" --listen "127.0.0.1:$ats_port" --policy "$work/policy.plist" --ca-file "$work/root.pem" \
  --system-roots off --log-file "$work/atsproxy.log" --threads "$THREADS" --verdict-ttl 3600 \
  --control-socket "$work/control.sock" 2>"$work/atsproxy.err" &
ats_pid=$!; pids+=("$ats_pid")
wait_for_port "$ats_port" atsproxy "$ats_pid"
# The same daemon with its log thrown away, for the second CPU mode: what writing the log costs.
atsnull_port=$(free_port)
"$ATSPROXY" --listen "127.0.0.1:$atsnull_port" --policy "$work/policy.plist" --ca-file "$work/root.pem" \
  --system-roots off --log-file /dev/null --threads "$THREADS" --verdict-ttl 3600 \
  --control-socket "$work/control-null.sock" 2>"$work/atsproxy-null.err" &
atsnull_pid=$!; pids+=("$atsnull_pid")
wait_for_port "$atsnull_port" atsproxy-null "$atsnull_pid"

# --- squid: CONNECT to any port, no cache, no access log ------------------------------------------

squid_port=$(free_port)
mkdir -p "$work/squid"; chmod 777 "$work/squid"
cat > "$work/squid.conf" <<EOF
http_port 127.0.0.1:$squid_port
http_access allow all
cache deny all
cache_mem 8 MB
access_log none
cache_store_log none
cache_log $work/squid/cache.log
pid_filename none
coredump_dir $work/squid
netdb_filename none
max_filedescriptors ${nofile/unlimited/65536}
shutdown_lifetime 1 seconds
workers 1
via off
EOF
squid -f "$work/squid.conf" --foreground 2>"$work/squid.err" &
squid_pid=$!; pids+=("$squid_pid")
wait_for_port "$squid_port" squid "$squid_pid"
# The same squid writing its access log (squid's default format, one line per request) to a file,
# for the second CPU mode: atsproxy always logs a line per connection, this squid does too.
squidlog_port=$(free_port)
mkdir -p "$work/squid-log"; chmod 777 "$work/squid-log"
sed -e "s|^http_port .*|http_port 127.0.0.1:$squidlog_port|" \
    -e "s|^access_log none|access_log stdio:$work/squid-log/access.log|" \
    -e "s|^cache_log .*|cache_log $work/squid-log/cache.log|" \
    -e "s|^coredump_dir .*|coredump_dir $work/squid-log|" "$work/squid.conf" > "$work/squid-log.conf"
squid -f "$work/squid-log.conf" --foreground 2>"$work/squid-log.err" &
squidlog_pid=$!; pids+=("$squidlog_pid")
wait_for_port "$squidlog_port" squid-log "$squidlog_pid"

# --- tinyproxy: CONNECT to any port (no ConnectPort lines), critical messages only --------------------

tiny_port=$(free_port)
cat > "$work/tinyproxy.conf" <<EOF
Port $tiny_port
Listen 127.0.0.1
Timeout 600
MaxClients $((TUNNELS + 100))
Allow 127.0.0.1
LogLevel Critical
LogFile "$work/tinyproxy.log"
DisableViaHeader Yes
EOF
[ "$(id -u)" = 0 ] && printf 'User nobody\nGroup nogroup\n' >> "$work/tinyproxy.conf" && touch "$work/tinyproxy.log" &&
  chmod 666 "$work/tinyproxy.log"
tinyproxy -d -c "$work/tinyproxy.conf" 2>"$work/tinyproxy.err" &
tiny_pid=$!; pids+=("$tiny_pid")
wait_for_port "$tiny_port" tinyproxy "$tiny_pid"

say "nginx :$upstream_port, atsproxy :$ats_port ($THREADS threads), squid :$squid_port, tinyproxy :$tiny_port, atsproxy-null :$atsnull_port, squid-log :$squidlog_port"
if [ "${HOLD:-0}" = 1 ]; then
  say "holding: nginx pid $nginx_pid, atsproxy pid $ats_pid, squid pid $squid_pid, tinyproxy pid $tiny_pid"
  say "  atsproxy with --log-file /dev/null :$atsnull_port pid $atsnull_pid, squid with an access log :$squidlog_port pid $squidlog_pid"
  say "  scratch directory $work (root.pem for load.py --cafile)"
  say "  curl --cacert $work/root.pem -x http://127.0.0.1:$ats_port -o /dev/null https://localhost:$upstream_port/big"
  say "Ctrl-C stops everything"
  sleep 2147483647 & pids+=($!)
  wait $!   # (a foreground sleep would hold off the trap until it ended)
fi
results="$work/results.jsonl"
: > "$results"
names=(atsproxy squid tinyproxy)
declare -A port=([atsproxy]=$ats_port [squid]=$squid_port [tinyproxy]=$tiny_port
  [atsproxy-null]=$atsnull_port [squid-log]=$squidlog_port)
declare -A pid=([atsproxy]=$ats_pid [squid]=$squid_pid [tinyproxy]=$tiny_pid
  [atsproxy-null]=$atsnull_pid [squid-log]=$squidlog_pid)

# --- 1. bulk throughput ---------------------------------------------------------------------------

download() {  # download NAME: one GET of /big, direct or through the named proxy; prints bytes/s
  local proxy=()
  [ "$1" = direct ] || proxy=(--proxy "http://127.0.0.1:${port[$1]}")
  curl -sS --fail --cacert "$work/root.pem" "${proxy[@]}" -o /dev/null -w '%{size_download} %{speed_download}\n' \
    "https://localhost:$upstream_port/big"
}
say "1/3 bulk throughput: $REPS x $SIZE_MIB MiB per path, interleaved"
for name in direct "${names[@]}"; do download "$name" >/dev/null; done   # warm: page cache, verdict cache
for rep in $(seq "$REPS"); do
  for name in direct "${names[@]}"; do
    read -r size speed < <(download "$name") || die "download through $name failed"
    [ "$size" = $((SIZE_MIB * 1048576)) ] || die "download through $name got $size bytes"
    printf '{"phase":"throughput","name":"%s","mib":%s,"mb_s":%s}\n' "$name" "$SIZE_MIB" \
      "$(awk -v s="$speed" 'BEGIN { printf "%.1f", s / 1e6 }')" >> "$results"
    say "  $name run $rep: $(awk -v s="$speed" 'BEGIN { printf "%.0f", s / 1e6 }') MB/s"
  done
done

# --- 2. CPU per tunnelled request -----------------------------------------------------------------

say "2/3 CPU per request: $ROUNDS x $REQUESTS new tunnels + TLS + small GET per proxy, $CONCURRENCY at a time, interleaved"
for round in $(seq "$ROUNDS"); do for name in "${names[@]}"; do
  lines_before=$(wc -l < "$work/atsproxy.log")
  line=$("$PYTHON" "$here/load.py" cpu --proxy "127.0.0.1:${port[$name]}" --target "localhost:$upstream_port" \
    --cafile "$work/root.pem" --pid "${pid[$name]}" --requests "$REQUESTS" --warmup 100 --concurrency "$CONCURRENCY") ||
    die "the request load through $name failed"
  if [ "$name" = atsproxy ]; then
    # One log line per connection: the proxy saw exactly the connections the client made.
    logged=$(( $(wc -l < "$work/atsproxy.log") - lines_before ))
    [ "$logged" -eq $((REQUESTS + 100)) ] ||
      die "atsproxy logged $logged connections, the client made $((REQUESTS + 100)) (warm-up included)"
    allowed=$(tail -n "$REQUESTS" "$work/atsproxy.log" | grep -c '"action":"allowed"' || true)
    [ "$allowed" -eq "$REQUESTS" ] || die "only $allowed of $REQUESTS atsproxy connections were allowed"
  fi
  printf '{"phase":"cpu","name":"%s","concurrency":%s,%s\n' "$name" "$CONCURRENCY" "${line#\{}" >> "$results"
  say "  $name round $round: $line"
done; done

# --- 2b. CPU per request, many clients at once, both proxies logging to a file -----------------------

if [ "$CONCURRENCY2" -gt 0 ]; then
  names2=(atsproxy squid-log atsproxy-null squid)
  say "2b CPU per request: $ROUNDS x $REQUESTS per proxy, $CONCURRENCY2 at a time: atsproxy (log file), squid (access log file), atsproxy (log /dev/null), squid (no log), interleaved"
  for round in $(seq "$ROUNDS"); do for name in "${names2[@]}"; do
    line=$("$PYTHON" "$here/load.py" cpu --proxy "127.0.0.1:${port[$name]}" --target "localhost:$upstream_port" \
      --cafile "$work/root.pem" --pid "${pid[$name]}" --requests "$REQUESTS" --warmup 100 --concurrency "$CONCURRENCY2") ||
      die "the request load through $name ($CONCURRENCY2 clients) failed"
    printf '{"phase":"cpu2","name":"%s","concurrency":%s,%s\n' "$name" "$CONCURRENCY2" "${line#\{}" >> "$results"
    say "  $name round $round: $line"
  done; done
  logged=$(wc -l < "$work/squid-log/access.log")
  say "  squid-log wrote $logged access-log lines ($(du -k "$work/squid-log/access.log" | cut -f1) KiB); atsproxy $(wc -l < "$work/atsproxy.log") lines ($(du -k "$work/atsproxy.log" | cut -f1) KiB)"
fi

# --- 3. memory per idle tunnel --------------------------------------------------------------------

say "3/3 memory per idle tunnel: $TUNNELS tunnels held per proxy"
for name in "${names[@]}"; do
  line=$("$PYTHON" "$here/load.py" idle --proxy "127.0.0.1:${port[$name]}" --target "localhost:$upstream_port" \
    --cafile "$work/root.pem" --pid "${pid[$name]}" --tunnels "$TUNNELS" --concurrency "$CONCURRENCY") ||
    die "opening idle tunnels through $name failed"
  printf '{"phase":"idle","name":"%s",%s\n' "$name" "${line#\{}" >> "$results"
  say "  $name: $line"
  sleep 1   # the closed tunnels drain before the next proxy is measured
done

# --- the table ------------------------------------------------------------------------------------

cpu_model=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
echo
echo "proxy-bench: $(nproc) cores ($cpu_model), atsproxy --threads $THREADS, $(squid -v | head -n 1),"
echo "tinyproxy $(tinyproxy -v 2>&1 | awk '{ print $2 }'), $(nginx -v 2>&1 | sed 's/.*: //') upstream with TLS 1.3, curl $(curl --version | awk 'NR == 1 { print $2 }')"
"$PYTHON" "$here/load.py" report "$results"
