import ATSPolicy
import EventLoop
import ProxyCore
import Testing

@Suite("Destination rules")
struct DestinationRulesTests {
    private static let lan = IPAddress("192.168.1.5")
    private static let loopbackClient = IPAddress("127.0.0.1")

    private static func rules(
        client: IPAddress?, allow: [String] = [], listeners: [String] = [], hostAddresses: [String] = []
    ) -> DestinationRules {
        let host = hostAddresses.compactMap { IPAddress($0) }
        return DestinationRules(
            client: client, allowedDestinations: allow.map { try! AddressRange(parsing: $0) },
            listeners: listeners.map { try! SocketAddress(parsing: $0) }, isHostAddress: { host.contains($0) })
    }

    @Test(
        "local ranges by kind, mapped IPv4 judged as IPv4, everything else not local",
        arguments: [
            ("127.0.0.1", LocalAddressKind.loopback), ("127.255.0.9", .loopback), ("::1", .loopback),
            ("::ffff:127.0.0.1", .loopback), ("169.254.169.254", .linkLocal), ("fe80::1", .linkLocal),
            ("febf::1", .linkLocal), ("::ffff:169.254.1.1", .linkLocal), ("0.0.0.0", .unspecified),
            ("0.1.2.3", .unspecified),
            ("::", .unspecified), ("224.0.0.1", .multicast), ("239.255.255.250", .multicast), ("ff02::1", .multicast),
        ] as [(String, LocalAddressKind)])
    func localKinds(_ text: String, _ kind: LocalAddressKind) throws {
        #expect(LocalAddressKind(try #require(IPAddress(text))) == kind)
    }

    @Test(
        "not local",
        arguments: [
            "192.168.1.5", "10.0.0.1", "8.8.8.8", "128.0.0.1", "126.255.255.255", "169.253.0.1", "223.255.255.255",
            "240.0.0.1", "2001:db8::1", "fec0::1", "::2", "::ffff:8.8.8.8", "::127.0.0.1", "fd00::2",
        ])
    func notLocal(_ text: String) throws {
        #expect(LocalAddressKind(try #require(IPAddress(text))) == nil)
    }

    /// (client, allow-destination, destination, expected refusal kind or nil)
    @Test(
        "who may reach what",
        arguments: [
            // A LAN client may not reach any local kind…
            ("192.168.1.5", [], "127.0.0.1:22", "loopback"),
            ("192.168.1.5", [], "[::ffff:127.0.0.1]:22", "loopback"),
            ("192.168.1.5", [], "[::1]:22", "loopback"),
            ("192.168.1.5", [], "169.254.169.254:80", "link-local"),
            ("192.168.1.5", [], "0.0.0.0:22", "unspecified"),
            ("192.168.1.5", [], "[::]:22", "unspecified"),
            ("192.168.1.5", [], "224.0.0.1:5353", "multicast"),
            // …but any other address, its own LAN included.
            ("192.168.1.5", [], "192.168.1.1:80", nil),
            ("192.168.1.5", [], "93.184.216.34:443", nil),
            // --allow-destination opens a range for everyone, mapped addresses included.
            ("192.168.1.5", ["127.0.0.0/8"], "127.0.0.1:22", nil),
            ("192.168.1.5", ["127.0.0.0/8"], "[::ffff:127.0.0.1]:22", nil),
            ("192.168.1.5", ["127.0.0.0/8"], "[::1]:22", "loopback"),
            ("192.168.1.5", ["169.254.169.254/32"], "169.254.169.253:80", "link-local"),
            // A loopback client may reach every local kind, mapped or not.
            ("127.0.0.1", [], "127.0.0.1:22", nil),
            ("::1", [], "169.254.169.254:80", nil),
            ("::ffff:127.0.0.1", [], "127.0.0.1:22", nil),
            // An IPv4 LAN client of an IPv6 listener is still a LAN client.
            ("::ffff:192.168.1.5", [], "127.0.0.1:22", "loopback"),
            // A client whose address is unknown is no loopback client.
            ("-", [], "127.0.0.1:22", "loopback"),
        ] as [(String, [String], String, String?)])
    func reach(_ client: String, _ allow: [String], _ destination: String, _ kind: String?) throws {
        let rules = Self.rules(client: IPAddress(client), allow: allow)
        let refusal = rules.vet(try SocketAddress(parsing: destination))
        switch refusal {
        case .local(let found, _)?: #expect(found.rawValue == kind, "\(refusal!)")
        case .proxyItself?: Issue.record("\(destination) taken for the proxy itself")
        case nil: #expect(kind == nil, "\(destination) was not refused")
        }
    }

    /// (listeners, host addresses, destination, refused as a loop?)
    @Test(
        "the proxy's own listener is refused for everyone, however it is addressed",
        arguments: [
            (["127.0.0.1:8080"], [], "127.0.0.1:8080", true),
            (["127.0.0.1:8080"], [], "[::ffff:127.0.0.1]:8080", true),
            (["127.0.0.1:8080"], [], "0.0.0.0:8080", true),
            (["127.0.0.1:8080"], [], "127.0.0.2:8080", false),
            (["127.0.0.1:8080"], [], "127.0.0.1:8081", false),
            (["192.0.2.2:3128"], ["192.0.2.2"], "192.0.2.2:3128", true),
            // A wildcard listener is reached at every address of the host: loopback, the interfaces'.
            (["0.0.0.0:3128"], ["192.0.2.2"], "192.0.2.2:3128", true),
            (["0.0.0.0:3128"], ["192.0.2.2"], "127.0.0.9:3128", true),
            (["0.0.0.0:3128"], ["192.0.2.2"], "[::1]:3128", true),
            (["[::]:3128"], ["192.0.2.2"], "[::ffff:192.0.2.2]:3128", true),
            (["[::]:3128"], ["fd00::2"], "[fd00::2]:3128", true),
            (["0.0.0.0:3128"], ["192.0.2.2"], "192.0.2.3:3128", false),
            (["0.0.0.0:3128"], ["192.0.2.2"], "192.0.2.2:3129", false),
        ] as [([String], [String], String, Bool)])
    func loop(_ listeners: [String], _ host: [String], _ destination: String, _ isLoop: Bool) throws {
        for client in [Self.loopbackClient, Self.lan] {
            let rules = Self.rules(
                client: client, allow: ["0.0.0.0/0", "::/0"], listeners: listeners, hostAddresses: host)
            let refusal = rules.vet(try SocketAddress(parsing: destination))
            if case .proxyItself? = refusal {
                #expect(isLoop, "\(destination) taken for the proxy itself (\(listeners))")
            } else {
                #expect(!isLoop, "\(destination) not refused as the proxy itself (\(listeners)), client \(client!)")
            }
        }
    }

    @Test("the refusal says who, where and why, and names the flag that opens it")
    func sentence() throws {
        let refusal = try #require(Self.rules(client: Self.lan).vet(try SocketAddress(parsing: "127.0.0.1:22")))
        #expect(refusal.destination.description == "127.0.0.1:22")
        #expect(
            refusal.sentence(client: "192.168.1.5")
                == "atsproxy does not connect clients from 192.168.1.5 to 127.0.0.1:22, "
                + "a loopback address of the proxy's host; see --allow-destination")
        let loop = try #require(
            Self.rules(client: Self.lan, listeners: ["0.0.0.0:3128"]).vet(try SocketAddress(parsing: "[::1]:3128")))
        #expect(
            loop.description
                == "[::1]:3128, the proxy's own listener 0.0.0.0:3128: the request would come back to the proxy")
    }

    @Test("an --allow-client range matches an IPv4 client of an IPv6 listener")
    func mappedClient() throws {
        let settings = ProxySettings(
            policy: TransportSecurityPolicy(), allowedClients: [try AddressRange(parsing: "192.168.1.0/24")])
        #expect(settings.allows(client: IPAddress("::ffff:192.168.1.5")))
        #expect(!settings.allows(client: IPAddress("::ffff:10.0.0.1")))
        #expect(ProxySettings(policy: TransportSecurityPolicy()).allows(client: IPAddress("::ffff:127.0.0.1")))
    }
}
