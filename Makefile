# atsproxy: `make run` and `make test` work on a fresh Debian machine with Swift installed.

# bash: the fuzz recipe reads PIPESTATUS.
SHELL        := /bin/bash
SWIFT        ?= swift
POLICY       ?= config/ats-defaults.plist
PREFIX       ?= /usr/local
# make run's settings (README, "make run's settings"): each is also a flag of atsproxy.
# CONTROL_SOCKET: under .build, so it needs no root (atsproxyctl status --socket .build/control.sock);
# RUN_CONTROL_SOCKET is its older name. LOG_FILE: the JSON lines atsproxyctl report and har read.
# CA_FILE: a PEM bundle of the team's own roots, trusted as a device that installed them trusts them.
# HOSTS_FILE: /etc/hosts-style names for staging servers. WEB_LISTEN: the live view's address; unset,
# the daemon's default (127.0.0.1:8081), skipped with a warning when another program has it. EXTRA:
# any other atsproxy flags, as one string (EXTRA="--mode report --block-style page").
RUN_CONTROL_SOCKET ?= .build/control.sock
CONTROL_SOCKET ?= $(RUN_CONTROL_SOCKET)
LOG_FILE     ?= .build/atsproxy.log
CA_FILE      ?=
HOSTS_FILE   ?=
WEB_LISTEN   ?=
EXTRA        ?=
# make run's TLS inspection: tunnel, or intercept (INSPECT=intercept), which mints certificates with
# the CA in RUN_CA_DIR, made on first use.
INSPECT      ?= tunnel
RUN_CA_DIR   ?= .build/ca
# make run's proxy address. LISTEN=0.0.0.0:8080 puts it on the LAN for a phone: clients from the
# private ranges (RUN_ALLOW_CLIENTS) are then allowed too, and the start-up banner shows a QR code
# of the onboarding page for each of this machine's addresses.
LISTEN       ?= 127.0.0.1:8080
RUN_ALLOW_CLIENTS ?= 127.0.0.0/8 ::1/128 10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 fc00::/7
RUN_ALLOW_FLAGS = $(if $(filter 127.% localhost% [::1]%,$(LISTEN)),,$(foreach range,$(RUN_ALLOW_CLIENTS),--allow-client $(range)))
# systemd gives systemd-analyze and logrotate gives logrotate, both for the tests that check the
# unit and the logrotate snippet; systemd-sysusers (in systemd) creates the service's user.
# libqrencode-dev draws the onboarding QR codes; zbar-tools (zbarimg) decodes them in the tests, and
# qrencode (the library's own command) is what the terminal drawing is compared with.
# dpkg-dev (dpkg-shlibdeps, and strip through binutils) and lintian are for make deb, which the
# Debian package's test runs. iproute2 (ip netns, veth) and nftables (nft) make the capture tests'
# own network namespaces and their redirect rules.
# groff-base and mandoc render the man pages make install installs, and zsh and fish check its
# completions (InstallTests); nodejs runs the PAC file's JavaScript in the onboarding tests.
# chromium and chromium-driver are the real browser (libnss3-tools: certutil, which trusts the CA in a
# test HOME's NSS store as a phone's trust switch does); the web tests drive headless (Selenium, from
# the test venv below); python3-venv makes that venv. gdb prints the threads of a daemon that did not
# stop when a test told it to, into that test's failure.
APT_PACKAGES := libssl-dev libevent-dev libnghttp2-dev zlib1g-dev libqrencode-dev libpsl-dev publicsuffix openssl curl python3 python3-venv util-linux systemd \
	logrotate nginx zbar-tools qrencode chromium chromium-driver libnss3-tools groff-base mandoc zsh fish nodejs \
	nghttp2-client nghttp2-server dpkg-dev lintian iproute2 nftables wireguard-go wireguard-tools gdb
# The tests' own Python packages (PyPI), in a virtual environment under .build: Selenium drives
# chromium for the web tests; prometheus-client's parser reads /metrics as Prometheus would; h2 makes
# the HTTP/2 tests' own servers and hostile peers, httpx[http2] and grpcio are real HTTP/2 clients
# (and grpcio a gRPC server). nghttp2-client and nghttp2-server give nghttp, h2load and nghttpd.
# jsonschema and xmlschema validate the SARIF, JUnit and HAR outputs against their schemas, and
# haralyzer reads the HAR as a consumer that is not ours.
TEST_VENV    ?= .build/test-venv
TEST_PYTHON_PACKAGES := selenium prometheus-client h2 httpx[http2] grpcio jsonschema xmlschema haralyzer

# What bench-proxy needs besides APT_PACKAGES: the upstream, the two peer proxies, the load client.
# squid-openssl is Debian's squid built with OpenSSL (the same squid 5 otherwise): bench-intercept's
# ssl-bump needs it, and it conflicts with the package squid, so every bench uses it. socat is
# bench-h2's CONNECT forwarder in front of the proxies (h2load speaks no proxy protocol).
BENCH_PACKAGES := nginx squid-openssl tinyproxy-bin python3 python3-venv procps socat
# bench-intercept's own Python environment, for mitmproxy (PyPI), under .build (make clean removes it).
BENCH_VENV   ?= .build/bench-venv
# Our own Swift code builds without a warning: -Xswiftc reaches every target, but SwiftPM builds
# remote packages (swift-argument-parser) with -suppress-warnings and leaves this flag out for them.
# `make build` and `make test` pass the same flags, so they share one debug build.
WERROR       := -Xswiftc -warnings-as-errors
# Extra flags for the benchmarks' release builds, e.g. SWIFT_BUILD_FLAGS="--scratch-path .build-bench".
SWIFT_BUILD_FLAGS ?=

.PHONY: all deps test-venv build lint format test test-sanitize test-asan test-tsan fuzz soak run bench bench-policy bench-proxy bench-hostile bench-intercept bench-latency bench-h2 bench-capture bench-venv release install uninstall deb clean

all: build

# Installs the Debian packages that are missing: as root directly, otherwise through sudo, and says
# so (with the command to run) when neither is possible.
deps:
	@command -v $(SWIFT) >/dev/null 2>&1 || { \
	  echo "make: '$(SWIFT)' not found: install Swift 6.1 or later (swift.org) and put it on PATH" >&2; exit 1; }
	@missing=""; \
	for pkg in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$pkg 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make: installing missing packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
	    sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	  else \
	    echo "make: cannot install$$missing: not root and sudo needs a password." >&2; \
	    echo "make: run: sudo apt-get update && sudo apt-get install -y$$missing" >&2; \
	    exit 1; \
	  fi; \
	fi

# The tests find it at .build/test-venv/bin/python3 (ATSPROXY_TEST_PYTHON overrides).
test-venv: deps
	@$(TEST_VENV)/bin/python3 -c "import selenium, prometheus_client, h2, httpx, grpc, jsonschema, xmlschema, haralyzer" 2>/dev/null || { \
	  python3 -m venv $(TEST_VENV) && $(TEST_VENV)/bin/pip install --quiet $(TEST_PYTHON_PACKAGES); }

build: deps
	$(SWIFT) build $(WERROR)

# Every test, Swift Testing only (there are no XCTest cases), after the format check (lint) and two
# builds that must succeed:
# the release build of every product (what make run, make install and the benchmarks use), and the
# debug build with the tests, warnings counted as errors. Both use the committed Package.resolved as
# it is (--force-resolved-versions: a Package.swift whose dependencies no longer match it fails here
# instead of being resolved anew). Then the fuzzers (60 s each), the soak (120 s), and every test
# again under AddressSanitizer and under ThreadSanitizer (test-sanitize). As root, the tests include
# `make deb` and the package's install, reinstall, removal and purge on this machine
# (DebianPackageTests; its release build, in .build/deb, adds about 9 minutes from clean).
test: deps test-venv lint
	$(SWIFT) build -c release --force-resolved-versions
	$(SWIFT) build --build-tests --force-resolved-versions $(WERROR)
	$(SWIFT) test --skip-build --disable-xctest
	@$(MAKE) --no-print-directory fuzz FUZZ_SEED=1
	@$(MAKE) --no-print-directory soak
	@$(MAKE) --no-print-directory test-sanitize

# The code's format, as .swift-format gives it (4 spaces, 120 columns): swift-format, which comes
# with the toolchain, checks every Swift file and fails on any finding; `make format` rewrites them.
FORMAT_PATHS := Sources Tests Fuzz bench/policy-bench Package.swift
lint:
	$(SWIFT) format lint --strict --recursive --parallel $(FORMAT_PATHS)

format:
	$(SWIFT) format --in-place --recursive --parallel $(FORMAT_PATHS)

# The fuzz targets (Fuzz/), each run by libFuzzer for FUZZ_SECONDS (CI: 60) over its seed corpus,
# with AddressSanitizer: a crash, a memory error or a leak stops the run and leaves the input that
# caused it in .build/fuzz-crashes (add it to the seeds, and a test, once fixed). New inputs the
# fuzzer finds go to .build/fuzz-corpus, not into the repository. Fuzz/Dictionaries/<name>.dict,
# when there is one, gives libFuzzer the target's tokens (-dict=).
FUZZ_SECONDS ?= 60
# libFuzzer's random seed; 0 picks one. make test uses 1, so that CI's run explores the inputs a
# local `make test` explored, and a crash it finds is one anyone can reproduce.
FUZZ_SEED    ?= 0
FUZZ_SCRATCH ?= .build/fuzz
FUZZ_TARGETS := fuzz-http-heads:Fuzz/Corpus/http-heads \
	fuzz-tls-hello:Tests/ProxyWireTests/Fixtures/tls \
	fuzz-plist:Tests/ATSPolicyTests/Fixtures/plist,Tests/ATSPolicyTests/Fixtures/policies,Tests/ATSPolicyTests/Fixtures/mistakes \
	fuzz-log-lines:Tests/ATSProxyCtlTests/Fixtures/report,Tests/ATSProxyCtlTests/Fixtures/har \
	fuzz-config:Fuzz/Corpus/config \
	fuzz-hosts-file:Fuzz/Corpus/hosts-file \
	fuzz-control:Fuzz/Corpus/control
fuzz: deps
	@set -e; mkdir -p .build/fuzz-crashes; for entry in $(FUZZ_TARGETS); do \
	  target=$${entry%%:*}; seeds=$$(echo $${entry#*:} | tr , ' '); \
	  dict=Fuzz/Dictionaries/$${target#fuzz-}.dict; dict=$$(test -f $$dict && echo -dict=$$dict || true); \
	  $(SWIFT) build -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING --scratch-path $(FUZZ_SCRATCH) --product $$target; \
	  mkdir -p .build/fuzz-corpus/$$target; \
	  echo "make: $$target for $(FUZZ_SECONDS) s over $$seeds $$dict"; \
	  $(FUZZ_SCRATCH)/debug/$$target -max_total_time=$(FUZZ_SECONDS) -seed=$(FUZZ_SEED) -print_final_stats=1 $$dict \
	    -artifact_prefix=.build/fuzz-crashes/$$target- .build/fuzz-corpus/$$target $$seeds 2>&1 | \
	    grep -E '^(stat::number_of_executed_units|stat::new_units_added|Done|==[0-9]+==|SUMMARY|artifact_prefix)|Precondition failed|Fatal error' ; \
	  test $${PIPESTATUS[0]} -eq 0 || { echo "make: $$target failed: see .build/fuzz-crashes" >&2; exit 1; }; \
	done

# Every test again under each sanitizer, daemons included (they are the sanitized binary too, and a
# report makes one exit non-zero, which its test checks): a report fails the run.
test-sanitize: test-asan test-tsan

# AddressSanitizer with leak detection: a memory error or a leak. Tests/Sanitizers/lsan.supp names
# the leaks outside our code (Foundation's), each with where it was seen. About 12 minutes on 2 cores.
ASAN_SCRATCH ?= .build/asan
test-asan: deps test-venv
	$(SWIFT) build --build-tests --force-resolved-versions -Xswiftc -sanitize=address --scratch-path $(ASAN_SCRATCH)
	ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(abspath Tests/Sanitizers/lsan.supp) \
		$(SWIFT) test --skip-build --disable-xctest --scratch-path $(ASAN_SCRATCH)

# ThreadSanitizer: a data race or a lock-order inversion between the loops, the probe threads and the
# main thread. It sees our locks because they are pthread mutexes (POSIX's Locked; it cannot see
# Synchronization.Mutex's futex). A report makes the process exit 66 at its end. Tests that measure
# memory or push 60,000 requests scale down when TSAN_OPTIONS is set. About 15 minutes on 2 cores.
TSAN_SCRATCH ?= .build/tsan
test-tsan: deps test-venv
	$(SWIFT) build --build-tests --force-resolved-versions -Xswiftc -sanitize=thread --scratch-path $(TSAN_SCRATCH)
	TSAN_OPTIONS=second_deadlock_stack=1 $(SWIFT) test --skip-build --disable-xctest --scratch-path $(TSAN_SCRATCH)

# The soak (Tests/Soak/soak.py, docs/development.md "Soak"): the release daemon on 127.0.0.1 for
# SOAK_SECONDS under mixed load (judged tunnels with SHA-256-checked transfers, intercepted and plain
# http:// requests, blocked hosts), hostile clients and upstreams, and a reload, a log rotation or a
# cache flush every 2 s; then checks every answer, one log line per connection, descriptors, threads,
# memory and a clean SIGTERM. Prints PASS/FAIL per check and exits 1 on any FAIL. make test runs it
# for 120 s.
SOAK_SECONDS ?= 120
soak: deps
	$(SWIFT) build -c release --product atsproxy
	$(SWIFT) build -c release --product atsproxyctl
	SOAK_SECONDS=$(SOAK_SECONDS) python3 -B Tests/Soak/soak.py

# Builds a release binary and starts the proxy on LISTEN (127.0.0.1:8080) with the default policy
# (override with POLICY=path), logging one JSON line per connection to LOG_FILE, the live view on
# WEB_LISTEN (or the daemon's default). Ctrl-C stops it. The CA in RUN_CA_DIR is made on first run,
# so the onboarding page can offer it; INSPECT=intercept also terminates TLS with it. The commands it
# prints work as printed from the repository's directory.
RUN_FLAGS = --listen $(LISTEN) --policy $(POLICY) --control-socket $(CONTROL_SOCKET) --log-file $(LOG_FILE) \
	--inspect $(INSPECT) --ca-dir $(RUN_CA_DIR) $(if $(CA_FILE),--ca-file $(CA_FILE)) \
	$(if $(HOSTS_FILE),--hosts-file $(HOSTS_FILE)) $(if $(WEB_LISTEN),--web-listen $(WEB_LISTEN)) \
	$(RUN_ALLOW_FLAGS) $(EXTRA)
run: deps
	$(SWIFT) build -c release --product atsproxy
	$(SWIFT) build -c release --product atsproxyctl
	@if [ ! -f $(RUN_CA_DIR)/ca.pem ]; then .build/release/atsproxyctl ca init --dir $(RUN_CA_DIR) >/dev/null || exit 2; fi
	@if [ "$(INSPECT)" = intercept ]; then .build/release/atsproxyctl ca show --dir $(RUN_CA_DIR); echo; fi
	@echo "make run: one JSON line per connection goes to $(LOG_FILE): tail -f $(LOG_FILE), or"
	@echo "  .build/release/atsproxyctl report $(LOG_FILE)    (the narrowest Info.plist for what was seen)"
	@echo "  .build/release/atsproxyctl status --socket $(CONTROL_SOCKET)"
	.build/release/atsproxy $(RUN_FLAGS)

# The benchmarks, one after the other (release builds; not tests).
bench: bench-policy bench-proxy bench-hostile

# Host lookups per second against a 10,000-domain policy.
bench-policy: deps
	$(SWIFT) run -c release $(SWIFT_BUILD_FLAGS) policy-bench

# The proxy against squid and tinyproxy through CONNECT tunnels to nginx on 127.0.0.1: bulk
# throughput, CPU per new tunnelled request, memory per idle tunnel (bench/proxy-bench/README.md).
# About 1.5 minutes; installs the peers it needs the way deps does.
bench-proxy: deps
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(BENCH_PACKAGES)"
	$(SWIFT) build -c release --product atsproxy $(SWIFT_BUILD_FLAGS)
	ATSPROXY="$$($(SWIFT) build -c release $(SWIFT_BUILD_FLAGS) --show-bin-path)/atsproxy" bench/proxy-bench/run.sh

# The proxy against 400 upstreams that never answer and 16 that drip a byte every 2 s: a compliant
# host's time to first byte under that load, threads, memory after 20,000 names, how long the hostile
# CONNECTs wait, bulk throughput and CPU per GiB against squid (bench/hostile-bench/README.md).
# About 1.5 minutes. Several goals fail while the probes run on a blocking pool: that is the point.
# The open-file limit is raised for the daemon (each waiting CONNECT holds two descriptors).
bench-hostile: deps
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(BENCH_PACKAGES)"
	$(SWIFT) build -c release --product atsproxy $(SWIFT_BUILD_FLAGS)
	ulimit -n 65536 2>/dev/null || ulimit -n "$$(ulimit -Hn)"; \
	  ATSPROXY="$$($(SWIFT) build -c release $(SWIFT_BUILD_FLAGS) --show-bin-path)/atsproxy" python3 bench/hostile-bench/hostile.py

# atsproxy --inspect intercept against mitmdump and squid's ssl-bump, with atsproxy's tunnel mode as
# the reference: CPU per new intercepted request, time a new host's leaf adds, bulk throughput, memory
# per idle intercepted connection; then bench-proxy's tunnel-mode run (bench/proxy-bench/README.md,
# "Intercept mode"). About 5 minutes. A peer that cannot be installed or run is reported as SKIP.
bench-intercept: deps bench-venv
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(BENCH_PACKAGES)"
	$(SWIFT) build -c release --product atsproxy $(SWIFT_BUILD_FLAGS)
	$(SWIFT) build -c release --product atsproxyctl $(SWIFT_BUILD_FLAGS)
	ulimit -n 65536 2>/dev/null || ulimit -n "$$(ulimit -Hn)"; \
	  bin="$$($(SWIFT) build -c release $(SWIFT_BUILD_FLAGS) --show-bin-path)"; \
	  ATSPROXY="$$bin/atsproxy" ATSPROXYCTL="$$bin/atsproxyctl" MITMDUMP="$(abspath $(BENCH_VENV))/bin/mitmdump" \
	  python3 bench/proxy-bench/intercept.py

# Time to first byte when the server is far away: nginx behind a userspace relay that delays every
# byte DELAY_MS (25) each way and gives a new TCP connection its round trip; direct (the client to the
# relay) against atsproxy in tunnel and intercept mode, a host's first connection and a repeat, and
# squid (CONNECT) and mitmdump as peers (bench/latency-bench/README.md). SAMPLES (7) per case,
# interleaved; about 1 minute. A peer that cannot be installed or run is reported as SKIP.
bench-latency: deps bench-venv
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(BENCH_PACKAGES)"
	$(SWIFT) build -c release --product atsproxy $(SWIFT_BUILD_FLAGS)
	$(SWIFT) build -c release --product atsproxyctl $(SWIFT_BUILD_FLAGS)
	bin="$$($(SWIFT) build -c release $(SWIFT_BUILD_FLAGS) --show-bin-path)"; \
	  ATSPROXY="$$bin/atsproxy" ATSPROXYCTL="$$bin/atsproxyctl" MITMDUMP="$(abspath $(BENCH_VENV))/bin/mitmdump" \
	  python3 bench/latency-bench/latency.py

# HTTP/2 through intercept mode: h2load (through socat, which speaks CONNECT) to nginx with http2,
# through atsproxy --inspect intercept, through mitmdump (HTTP/2 on) and directly: CPU per new h2
# connection and per extra stream, streams/s with 100 concurrent streams on 10 connections, bulk on
# one stream, memory per idle h2 connection (bench/h2-bench/README.md). About 2 minutes. mitmdump,
# when it cannot be installed or run, is reported as SKIP.
bench-h2: deps bench-venv
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(BENCH_PACKAGES)"
	$(SWIFT) build -c release --product atsproxy $(SWIFT_BUILD_FLAGS)
	$(SWIFT) build -c release --product atsproxyctl $(SWIFT_BUILD_FLAGS)
	ulimit -n 65536 2>/dev/null || ulimit -n "$$(ulimit -Hn)"; \
	  bin="$$($(SWIFT) build -c release $(SWIFT_BUILD_FLAGS) --show-bin-path)"; \
	  ATSPROXY="$$bin/atsproxy" ATSPROXYCTL="$$bin/atsproxyctl" MITMDUMP="$(abspath $(BENCH_VENV))/bin/mitmdump" \
	  python3 bench/h2-bench/h2.py

# The capture paths (issue 30) in two network namespaces the run makes: the same curl on a "phone"
# namespace through the proxy setting, transparent mode (nftables redirect) and WireGuard (wireguard-go
# on both ends), and directly: time to first byte against the proxy setting's, bulk through WireGuard
# against transparent mode, atsproxy's CPU per new connection per path (bench/capture-bench/README.md).
# Needs root. About 1 minute.
bench-capture: deps
	$(SWIFT) build -c release --product atsproxy $(SWIFT_BUILD_FLAGS)
	$(SWIFT) build -c release --product atsproxyctl $(SWIFT_BUILD_FLAGS)
	bin="$$($(SWIFT) build -c release $(SWIFT_BUILD_FLAGS) --show-bin-path)"; \
	  ATSPROXY="$$bin/atsproxy" ATSPROXYCTL="$$bin/atsproxyctl" python3 bench/capture-bench/capture.py

# mitmproxy from PyPI in its own virtual environment; a failure leaves mitmdump's rows SKIP, not the run.
bench-venv:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="python3 python3-venv"
	@[ -x $(BENCH_VENV)/bin/mitmdump ] || { \
	  python3 -m venv $(BENCH_VENV) && $(BENCH_VENV)/bin/pip install --quiet mitmproxy; } || \
	  echo "make: mitmproxy could not be installed into $(BENCH_VENV): the benchmark will skip mitmdump" >&2

# Release builds of the two executables (make install builds them first).
release: deps
	$(SWIFT) build -c release --product atsproxy
	$(SWIFT) build -c release --product atsproxyctl

clean:
	rm -rf .build

include install.mk
include deb.mk
