import LogRecord
import Testing
import TextFormats

/// Which app a User-Agent names, and the iOS version its Darwin version implies.
@Suite("The app a User-Agent names")
struct AppAgentTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let userAgent: String
        /// nil: recorded as `other`.
        let name: String?
        var version: String? = nil
        var cfNetwork: String? = nil
        var darwin: String? = nil
        var iOS: String? = nil
        var testDescription: String { userAgent }
    }

    static let cases: [Case] = [
        // URLSession's default, as the issue quotes it.
        Case(
            userAgent: "MyApp/1.4.2 CFNetwork/1568.100.1 Darwin/24.0.0", name: "MyApp", version: "1.4.2",
            cfNetwork: "1568.100.1", darwin: "24.0.0", iOS: "18.0"),
        // A bundle name with a space, percent-encoded by URLSession.
        Case(
            userAgent: "My%20App/42 CFNetwork/1494.0.7 Darwin/23.4.0", name: "My App", version: "42",
            cfNetwork: "1494.0.7", darwin: "23.4.0", iOS: "17.4"),
        // …and sent with the space by others: the name is everything before CFNetwork.
        Case(
            userAgent: "Kickbase GmbH/5.5.2 CFNetwork/1568.200.51 Darwin/24.1.0", name: "Kickbase GmbH",
            version: "5.5.2", cfNetwork: "1568.200.51", darwin: "24.1.0", iOS: "18.1"),
        // iOS 26 runs Darwin 25.
        Case(
            userAgent: "Weather/1 CFNetwork/3826.500.1 Darwin/25.1.0", name: "Weather", version: "1",
            cfNetwork: "3826.500.1", darwin: "25.1.0", iOS: "26.1"),
        // iOS 14's kernels ran a minor version behind from 14.2.
        Case(
            userAgent: "Old/7 CFNetwork/1240.0.4 Darwin/20.5.0", name: "Old", version: "7", cfNetwork: "1240.0.4",
            darwin: "20.5.0", iOS: "14.6"),
        Case(
            userAgent: "Old/7 CFNetwork/1206 Darwin/20.0.0", name: "Old", version: "7", cfNetwork: "1206",
            darwin: "20.0.0", iOS: "14.0"),
        // Before iOS 14 only the major version.
        Case(
            userAgent: "Older/3 CFNetwork/1121.2.2 Darwin/19.2.0", name: "Older", version: "3",
            cfNetwork: "1121.2.2", darwin: "19.2.0", iOS: "13"),
        // A Darwin version no iOS release had (a Mac from before iOS): no iOS implied.
        Case(
            userAgent: "Tool/2 CFNetwork/454.4 Darwin/10.0.0", name: "Tool", version: "2", cfNetwork: "454.4",
            darwin: "10.0.0", iOS: nil),
        // A system daemon's agent with no version.
        Case(
            userAgent: "trustd (unknown version) CFNetwork/1568.100.1 Darwin/24.0.0",
            name: "trustd (unknown version)", version: nil, cfNetwork: "1568.100.1", darwin: "24.0.0", iOS: "18.0"),
        // Alamofire's default: the iOS version stated in the comment.
        Case(
            userAgent: "iOS Example/1.0 (org.alamofire.iOS-Example; build:1; iOS 17.4.0) Alamofire/5.8.0",
            name: "iOS Example", version: "1.0", iOS: "17.4.0"),
        // AFNetworking's.
        Case(userAgent: "MyApp/2.1 (iPhone; iOS 16.2; Scale/3.00)", name: "MyApp", version: "2.1", iOS: "16.2"),
        // Browsers, WebViews and other agents.
        Case(
            userAgent:
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
            name: nil),
        Case(userAgent: "Mozilla/5.0 (iPhone; iOS 17.4) CFNetwork/1494.0.7 Darwin/23.4.0", name: nil),
        Case(userAgent: "curl/7.88.1", name: nil),
        Case(userAgent: "okhttp/4.12.0", name: nil),
        Case(userAgent: "Dart/3.3 (dart:io)", name: nil),
        Case(userAgent: "CFNetwork/1568 Darwin/24.0.0", name: nil),
        Case(userAgent: "grpc-python/1.62.1 grpc-c/39.0.0 (linux; chttp2)", name: nil),
    ]

    @Test("User-Agents parsed", arguments: cases)
    func parsed(_ item: Case) throws {
        let agent = try #require(AppAgent(userAgent: item.userAgent))
        #expect(agent.userAgent == item.userAgent)
        guard let name = item.name else {
            #expect(agent == .other(userAgent: item.userAgent))
            #expect(agent.label == "other")
            return
        }
        guard case .app(let release) = agent else {
            Issue.record("\(item.userAgent) was not read as an app")
            return
        }
        #expect(release.name == name)
        #expect(agent.label == name)
        #expect(release.version == item.version)
        #expect(release.cfNetwork == item.cfNetwork)
        #expect(release.darwin == item.darwin)
        #expect(release.iOS == item.iOS)
    }

    @Test("an empty User-Agent is none, and a long one is cut")
    func bounds() throws {
        #expect(AppAgent(userAgent: "  ") == nil)
        let long = "X/1 " + String(repeating: "a", count: 2_000)
        #expect(try #require(AppAgent(userAgent: long)).userAgent.count == AppAgent.maximumLength)
    }

    @Test("a malformed percent escape is kept as sent")
    func malformedEscape() throws {
        let agent = try #require(AppAgent(userAgent: "A%2/1 CFNetwork/1 Darwin/24.0.0"))
        #expect(agent.label == "A%2")
    }

    @Test("the app object reads back what it writes", arguments: cases)
    func roundTrip(_ item: Case) throws {
        let agent = try #require(AppAgent(userAgent: item.userAgent))
        var builder = JSONObjectBuilder()
        builder.add("app", object: agent)
        let line = try JSONValue(parsing: builder.value.serialized)
        #expect(line["app"]?["kind"]?.stringValue == (item.name == nil ? "other" : "app"))
        #expect(AppAgent(json: line["app"]) == agent)
    }

    @Test("no app: null, absent, or not an object")
    func noApp() throws {
        #expect(AppAgent(json: nil) == nil)
        #expect(AppAgent(json: .null) == nil)
        #expect(AppAgent(json: .string("MyApp")) == nil)
    }

    @Test("a connection's memo parses each User-Agent it has not just seen, byte for byte")
    func memo() {
        var memo = AppAgentMemo()
        let first = "MyApp/1.4.2 CFNetwork/1568.100.1 Darwin/24.0.0"
        #expect(memo.agent(userAgent: first)?.label == "MyApp")
        #expect(memo.agent(userAgent: first)?.label == "MyApp")
        #expect(memo.agent(userAgent: "Other/2 CFNetwork/1568.100.1 Darwin/24.0.0")?.label == "Other")
        #expect(memo.agent(userAgent: nil) == nil)
        #expect(memo.agent(userAgent: " \tcurl/8.5.0\t ")?.userAgent == "curl/8.5.0")
        // The same text in another byte form is another User-Agent, logged as sent.
        #expect(memo.agent(userAgent: "Caf\u{E9}/1 CFNetwork/1 Darwin/24.0.0")?.label == "Caf\u{E9}")
        let decomposed = "Cafe\u{301}/1 CFNetwork/1 Darwin/24.0.0"
        #expect(memo.agent(userAgent: decomposed)?.userAgent.utf8.elementsEqual(decomposed.utf8) == true)
    }
}
