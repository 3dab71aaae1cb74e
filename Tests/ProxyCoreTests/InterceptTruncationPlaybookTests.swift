import ATSPolicy
import Foundation
import Glibc
import LogRecord
import TLSTestSupport
import Testing
import TextFormats

@testable import ProxyCore

/// Issue 27, item 2, in intercept mode, scripted (``InterceptRig``): a response cut off before its
/// end never reaches the device with a close_notify after it (which would make a body that runs
/// until the close pass for a whole one): the device's connection is reset once what was relayed is
/// out, and the request's line and the tunnel's say `response_truncated`. The origin's clean end of
/// such a body is its close_notify: a FIN without one is a cut too.
@Suite("Intercept sessions, scripted: a cut-off response")
struct InterceptTruncationPlaybookTests {
    /// How the origin (or the idle watch) stops the response short.
    enum Cut: Sendable {
        /// A FIN with no close_notify before it.
        case finWithoutCloseNotify
        /// A reset of the origin's TCP connection.
        case reset
        /// close_notify and a FIN: clean, but before the framing's end.
        case closeNotify
        /// Nothing moves for the idle timeout.
        case idle
    }

    struct Shape: Sendable, CustomTestStringConvertible {
        var name: String
        var response: String
        var cut: Cut
        var sentence: String
        var testDescription: String { name }
    }

    static let closeDelimited = ResponseTruncationPlaybookTests.closeDelimited
    static let partial = ResponseTruncationPlaybookTests.partial

    static let shapes = [
        Shape(
            name: "a body that runs until the close, the origin's FIN without close_notify",
            response: closeDelimited + partial, cut: .finWithoutCloseNotify,
            sentence:
                "the response was cut off after 1200 body bytes: the origin ended its TLS session without close_notify"),
        Shape(
            name: "a body that runs until the close, the origin's reset", response: closeDelimited + partial,
            cut: .reset, sentence: "the response was cut off after 1200 body bytes: the origin reset the connection"),
        Shape(
            name: "a Content-Length not reached, the origin's close_notify",
            response: "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + partial, cut: .closeNotify,
            sentence:
                "the response was cut off after 1200 body bytes of 5000 (its Content-Length): the origin closed the connection"
        ),
        Shape(
            name: "a body that runs until the close, then nothing for the idle timeout",
            response: closeDelimited + partial, cut: .idle,
            sentence: "the response was cut off after 1200 body bytes: closed: idle for 300 s, no byte moved either way"
        ),
    ]

    /// An intercepted tunnel whose origin has sent `response` to the device's request.
    static func answered(_ response: String) throws -> (
        rig: InterceptRig, client: ScriptedStream, upstream: ScriptedStream, device: MemoryTLSPeer,
        origin: MemoryTLSPeer
    ) {
        let rig = try InterceptRig()
        let (client, upstream, device, origin) = try rig.intercepted()
        device.send(InterceptPlaybookTests.request)
        rig.settle()
        #expect(origin.take() == InterceptPlaybookTests.forwardedRequest)
        origin.send(response)
        rig.settle()
        return (rig, client, upstream, device, origin)
    }

    @Test(
        "the device gets what was relayed, then a reset and no close_notify; both lines say response_truncated",
        arguments: shapes)
    func cutOff(_ shape: Shape) throws {
        let (rig, client, upstream, device, origin) = try Self.answered(shape.response)
        #expect(client.isOpen && !device.sawEnd)
        switch shape.cut {
        case .finWithoutCloseNotify: upstream.peerEnds()
        case .reset: upstream.peerFails(ECONNRESET)
        case .closeNotify:
            origin.closeNotify()
            upstream.peerEnds()
        case .idle: try #require(rig.environment.idleWatches.last { $0.isWatching }).comeDue()
        }
        rig.settle()
        #expect(client.wasReset, "the device's connection is reset")
        #expect(!device.sawCloseNotify, "no close_notify reached the device")
        let received = device.take()
        #expect(received.hasPrefix("HTTP/1.1 200 OK\r\n") && received.hasSuffix("\r\n\r\n" + Self.partial))
        let line = try #require(rig.environment.requests.first)
        #expect(line.status == 200)
        #expect(line.failure == .responseTruncated)
        #expect(line.upstreamError?.hasPrefix(shape.sentence) == true, "\(String(describing: line.upstreamError))")
        #expect(line.json[RequestField.failure] == .string("response_truncated"))
        let record = try #require(rig.record, "the tunnel ended with the reset")
        #expect(record.failure == .responseTruncated && record.action == .allowed)
    }

    @Test("control: a body that runs until the origin's close_notify is whole; the device gets close_notify")
    func cleanClose() throws {
        let (rig, client, upstream, device, origin) = try Self.answered(Self.closeDelimited + Self.partial)
        origin.closeNotify()
        upstream.peerEnds()
        rig.settle()
        #expect(device.sawCloseNotify, "the device's session ends cleanly")
        #expect(!client.wasReset)
        #expect(device.take().hasSuffix("\r\n\r\n" + Self.partial))
        let line = try #require(rig.environment.requests.first)
        #expect(line.failure == nil && line.upstreamError == nil)
        #expect(line.json[RequestField.failure] == .null)
        client.peerEnds()
        rig.settle()
        #expect(rig.record?.failure == nil)
    }

    @Test("an origin's surplus: the request line carries its code, as the tunnel's does")
    func surplusCode() throws {
        let (rig, _, _, device, _) = try Self.answered(
            InterceptPlaybookTests.response + ResponseSurplusPlaybookTests.smuggled)
        #expect(device.take() == InterceptPlaybookTests.forwardedResponse)
        #expect(rig.environment.requests.first?.failure == .responseSurplus)
    }
}
