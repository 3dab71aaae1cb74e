// swift-tools-version: 6.1
import PackageDescription

// The only Swift package dependency is swift-argument-parser: every other one would add
// minutes to each CI run, which builds from a fresh clone.
let package = Package(
    name: "atsproxy",
    products: [
        .library(name: "ATSPolicy", targets: ["ATSPolicy"]),
        .executable(name: "atsproxy", targets: ["atsproxy"]),
        .executable(name: "atsproxyctl", targets: ["atsproxyctl"]),
        .executable(name: "policy-bench", targets: ["policy-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0")
    ],
    targets: [
        // JSON (values, a parser, a writer, JSON lines) and RFC 3339 timestamps: pure Swift, no C
        // module and no Foundation, shared by the policy, the log's writer and its readers.
        .target(name: "TextFormats"),
        .testTarget(name: "TextFormatsTests", dependencies: ["TextFormats", "TLSTestSupport"]),
        // The log's schema, the one definition its writer (ProxyCore) and its readers (TrafficReport,
        // LiveView) share: field names, kinds, actions and failure codes. Pure Swift, no C module.
        .target(name: "LogRecord", dependencies: ["TextFormats"]),
        .testTarget(name: "LogRecordTests", dependencies: ["LogRecord", "TextFormats"]),
        // Pure Swift: no C module, so the policy and its CLI build without libevent or OpenSSL.
        .target(name: "ATSPolicy", dependencies: ["TextFormats"]),
        // The policy's settings as command-line values, shared by both executables.
        .target(
            name: "ATSPolicyArguments",
            dependencies: ["ATSPolicy", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // The control CLI's commands live in a library so tests run them without a process.
        .target(
            name: "ATSProxyCtl",
            dependencies: [
                "TextFormats", "LogRecord",
                // ProxyCore for diagnose's probes: the proxy's own probe engine, run in a loop of its
                // own (libevent and OpenSSL), so diagnose judges a server as the proxy does.
                // TLSInspection for its certificates and anchors; ProxyWire (pure Swift) reads the
                // response heads of diagnose's loads.
                "ATSPolicy", "ATSPolicyArguments", "ControlProtocol", "ProxyCore", "TLSInspection", "ProxyWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                "TrafficReport",
                // `onboard`: the onboarding URL's QR code in the terminal.
                "Onboarding",
                // `wireguard add-device`, `remove-device`, `list`.
                "WireGuard",
            ]
        ),
        .executableTarget(name: "atsproxyctl", dependencies: ["ATSProxyCtl"]),
        // WireGuard for phones (`--wireguard-listen`, `atsproxyctl wireguard`): the state directory
        // the two share (keys and devices), the configurations and the profile. Keys come from
        // OpenSSL (TLSInspection's X25519); the tunnel itself is Debian's wireguard-go or the kernel's.
        .target(name: "WireGuard", dependencies: ["ATSPolicy", "TLSInspection", "POSIX", "TextFormats"]),
        .testTarget(name: "WireGuardTests", dependencies: ["WireGuard", "TLSInspection", "TLSTestSupport"]),
        // The control socket's commands and a blocking client: shared by the daemon and atsproxyctl,
        // pure Swift (no libevent, no OpenSSL) so atsproxyctl stays small.
        .target(name: "ControlProtocol", dependencies: ["ATSPolicy", "POSIX"]),
        .testTarget(name: "ControlProtocolTests", dependencies: ["ControlProtocol"]),
        // zlib, as Debian ships it: logrotate compresses the rotated logs that `report` reads.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // `atsproxyctl report`: the proxy's JSON logs (plain or gzip) read back, judged per host, and
        // turned into the narrowest NSAppTransportSecurity that lets the observed traffic through.
        .target(name: "TrafficReport", dependencies: ["POSIX", "TextFormats", "LogRecord", "ATSPolicy", "CZlib"]),
        .testTarget(
            name: "TrafficReportTests",
            dependencies: ["TextFormats", "LogRecord", "TrafficReport", "ATSPolicy", "TLSTestSupport"]),
        // libevent, as Debian ships it. pkgConfig only contributes flags: libevent_openssl.pc would
        // link the combined libevent as well as libevent_core, two copies of the loop internals.
        .systemLibrary(name: "CLibevent", pkgConfig: "libevent_core", providers: [.apt(["libevent-dev"])]),
        // Swift over libevent: event bases, listeners, buffered connections, timers.
        .target(name: "EventLoop", dependencies: ["CLibevent", "CSplice", "CProxyShims", "POSIX"]),
        // What several modules need of the system, in one home: the lock (a pthread mutex, which
        // ThreadSanitizer sees).
        .target(name: "POSIX"),
        .testTarget(name: "POSIXTests", dependencies: ["POSIX"]),
        // glibc's <malloc.h> (malloc_trim), which the Glibc module leaves out: a module map only.
        .systemLibrary(name: "CMalloc"),
        // splice(2), pipe2(2) and the pipe-size fcntls, which Glibc declares only under _GNU_SOURCE.
        .target(name: "CSplice"),
        // Pure-Swift wire parsers for the proxy: HTTP/1.1 heads and bodies, TLS hellos seen in transit.
        .target(name: "ProxyWire"),
        // libnghttp2, as Debian ships it: HTTP/2's framing, HPACK, flow control and its defences
        // (Rapid Reset, CONTINUATION floods) from the library curl, Envoy and Apache use, which Debian
        // keeps patched, rather than an HTTP/2 stack of our own. It does no I/O: bytes in, bytes out.
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        // Swift over libnghttp2: one HTTP/2 connection's session, either end, fed and drained as bytes.
        .target(name: "HTTP2", dependencies: ["CNGHTTP2"]),
        .testTarget(name: "HTTP2Tests", dependencies: ["HTTP2"]),
        // The proxy itself: connection records, verdict cache, request handling.
        .target(
            name: "ProxyCore",
            dependencies: [
                "TextFormats", "LogRecord", "ATSPolicy", "EventLoop", "ProxyWire", "TLSInspection", "POSIX", "HTTP2",
                "TrafficReport",
            ]),
        // The daemon's command and its run loop, in a library so tests can drive it.
        .target(
            name: "ATSProxyDaemon",
            dependencies: [
                "TextFormats", "LogRecord",
                "ATSPolicy", "ATSPolicyArguments", "ControlProtocol", "EventLoop", "ProxyCore", "TLSInspection",
                "Onboarding", "LiveView", "ProxyWire", "CMalloc", "POSIX", "TrafficReport", "WireGuard",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "atsproxy", dependencies: ["ATSProxyDaemon"]),
        // OpenSSL, as Debian ships it: the module map and an umbrella header only.
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // Swift over OpenSSL: certificate facts, chain verification, the ATS-shaped probe.
        // One-line C wrappers for the OpenSSL macros Swift cannot import.
        .target(name: "CProxyShims", dependencies: ["COpenSSL"]),
        // The Public Suffix List for the certificate name rule: Debian's libpsl over the publicsuffix
        // package's data (ICANN section), rather than a list of our own that would go stale; libpsl
        // reads the package's file at run time, so a Debian update of the list reaches atsproxy.
        .systemLibrary(name: "CPSL", pkgConfig: "libpsl", providers: [.apt(["libpsl-dev", "publicsuffix"])]),
        .target(
            name: "TLSInspection", dependencies: ["ATSPolicy", "COpenSSL", "CProxyShims", "CPSL", "POSIX", "ProxyWire"]),
        // libqrencode, as Debian ships it: QR codes of the onboarding URL (a library made for it,
        // not an encoder of our own).
        .systemLibrary(name: "CQREncode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        // Getting devices onto the proxy: the onboarding pages, the PAC file, the CA downloads and the
        // QR codes of their URL. Pure Swift over ProxyWire's local request and response (ATSPolicy for its JSON writer).
        .target(name: "Onboarding", dependencies: ["TextFormats", "ATSPolicy", "CQREncode", "ProxyWire"]),
        // The web listener's live view: the daemon's own log lines gathered per host, with the
        // report's narrowest NSAppTransportSecurity for what was seen.
        .target(
            name: "LiveView", dependencies: ["TextFormats", "LogRecord", "ATSPolicy", "TrafficReport", "ProxyWire"]),
        .testTarget(
            name: "LiveViewTests",
            dependencies: ["TextFormats", "LogRecord", "LiveView", "ATSPolicy", "TrafficReport", "ProxyWire"]),
        .testTarget(name: "OnboardingTests", dependencies: ["Onboarding", "ProxyWire", "TLSTestSupport"]),
        .executableTarget(name: "policy-bench", dependencies: ["ATSPolicy"], path: "bench/policy-bench"),
        // Fuzz targets for the parsers of outside bytes (Fuzz/, `make fuzz`): libFuzzer runs them in a
        // build with -sanitize=fuzzer,address -DFUZZING; an ordinary build makes each a replayer of
        // the files it is given, which the tests run over the seed corpora.
        .target(name: "FuzzDriver", dependencies: ["POSIX"], path: "Fuzz/FuzzDriver"),
        .executableTarget(
            name: "fuzz-http-heads", dependencies: ["FuzzDriver", "ProxyWire"], path: "Fuzz/fuzz-http-heads"),
        .executableTarget(
            name: "fuzz-tls-hello", dependencies: ["FuzzDriver", "ProxyWire"], path: "Fuzz/fuzz-tls-hello"),
        .executableTarget(name: "fuzz-plist", dependencies: ["FuzzDriver", "ATSPolicy"], path: "Fuzz/fuzz-plist"),
        .executableTarget(
            name: "fuzz-log-lines", dependencies: ["FuzzDriver", "TrafficReport"], path: "Fuzz/fuzz-log-lines"),
        .executableTarget(
            name: "fuzz-config", dependencies: ["FuzzDriver", "ATSProxyDaemon"], path: "Fuzz/fuzz-config"),
        .executableTarget(
            name: "fuzz-hosts-file", dependencies: ["FuzzDriver", "TLSInspection"], path: "Fuzz/fuzz-hosts-file"),
        .executableTarget(
            name: "fuzz-control", dependencies: ["FuzzDriver", "ControlProtocol", "ATSPolicy"],
            path: "Fuzz/fuzz-control"),
        .testTarget(
            name: "ATSPolicyTests", dependencies: ["TextFormats", "ATSPolicy", "TLSTestSupport"], exclude: ["Fixtures"]),
        // COpenSSL for SHA-256: the splice tests check 64 MiB byte for byte.
        .testTarget(name: "EventLoopTests", dependencies: ["EventLoop", "COpenSSL", "POSIX"]),
        // ProxyWire: the request parser is the fuzz test's oracle for what the proxy must answer; its
        // hello parser measures and reads the hellos the probes send.
        // COpenSSL and its shims: the scripted intercept tests' devices and origins are OpenSSL
        // endpoints over memory BIOs (a device that refuses a certificate, a TLS 1.0 client), which
        // the proxy's own TLS types, made never to fail a handshake on a certificate, cannot play.
        .testTarget(
            name: "ProxyCoreTests",
            dependencies: [
                "TextFormats", "LogRecord", "ProxyCore", "ATSPolicy", "EventLoop", "ProxyWire", "TLSInspection",
                "TLSTestSupport", "POSIX", "COpenSSL", "CProxyShims", "HTTP2", "TrafficReport",
            ]),
        .testTarget(
            name: "ATSProxyDaemonTests",
            dependencies: [
                "ATSProxyDaemon", "ATSPolicy", "EventLoop", "ProxyCore", "TLSTestSupport", "POSIX",
                // atsproxyctl's commands, run in-process against the real daemon's control socket.
                "ATSProxyCtl",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            // Browser/: the Python that drives chromium for the web tests. Smuggling/: the smuggling
            // corpus, its generator, its origin and its client (Smuggling/README.md). HTTP2/: the
            // hostile HTTP/2 peers (devices and origins) the HTTP/2 relay is tried against.
            exclude: ["Browser", "HTTP2", "Smuggling"]
        ),
        .testTarget(name: "ProxyWireTests", dependencies: ["ProxyWire", "TLSTestSupport"], exclude: ["Fixtures"]),
        // Real certificates and real openssl servers for the tests that need them.
        .target(name: "TLSTestSupport", path: "Tests/TLSTestSupport"),
        .testTarget(
            name: "TLSInspectionTests", dependencies: ["TLSInspection", "ATSPolicy", "TLSTestSupport"]),
        .testTarget(
            name: "ATSProxyCtlTests",
            dependencies: [
                "TextFormats", "ATSProxyCtl", "ATSPolicy", "ProxyCore", "TLSInspection", "TLSTestSupport",
                "TrafficReport",
            ],
            exclude: ["Fixtures"]),
    ],
    swiftLanguageModes: [.v6]
)

// One place for upcoming features, as swift-nio-ssl does.
for target in package.targets where target.type != .system && target.name != "CProxyShims" && target.name != "CSplice" {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .enableUpcomingFeature("MemberImportVisibility"),
            .enableUpcomingFeature("ExistentialAny"),
        ]
}
