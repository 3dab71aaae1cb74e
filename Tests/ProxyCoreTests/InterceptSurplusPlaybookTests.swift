import ATSPolicy
import Foundation
import LogRecord
import TLSTestSupport
import Testing

@testable import ProxyCore

/// Issue 27 in intercept mode, scripted (``InterceptRig``): the origin connection serves one device
/// connection only, so an origin's bytes beyond its response (item 1) end both, after the response;
/// and a response Transfer-Encoding that is not a known list ending in chunked (item 5) is refused
/// with 502 inside the device's TLS session.
@Suite("Intercept sessions, scripted: response framing")
struct InterceptSurplusPlaybookTests {
    static let request = InterceptPlaybookTests.request
    static let response = InterceptPlaybookTests.response

    @Test("a pipelining device: the origin's surplus never answers its second request; both connections end")
    func pipelinedSurplus() throws {
        let rig = try InterceptRig()
        let (client, upstream, device, origin) = try rig.intercepted()
        device.send(Self.request + Self.request)
        rig.settle()
        #expect(
            origin.take() == InterceptPlaybookTests.forwardedRequest, "the second request waits for the first's answer")
        origin.send(Self.response + ResponseSurplusPlaybookTests.smuggled)
        rig.settle()
        #expect(device.take() == InterceptPlaybookTests.forwardedResponse, "the response as framed, nothing after it")
        #expect(device.sawEnd, "the device's connection ends once the response is out")
        #expect(origin.take().isEmpty, "the second request never went to the origin that spoke out of turn")
        #expect(!upstream.isOpen)
        client.peerEnds()
        rig.settle()
        let lines = rig.environment.requests
        #expect(lines.count == 1, "one request was answered: \(lines.map(\.upstreamError))")
        let line = try #require(lines.first)
        #expect(line.status == 200)
        let count = ResponseSurplusPlaybookTests.smuggled.utf8.count
        #expect(
            line.upstreamError?.hasPrefix("the origin sent \(count) bytes beyond the end of its response") == true,
            "\(String(describing: line.upstreamError))")
        let record = try #require(rig.record)
        #expect(record.failure == .responseSurplus && record.action == .allowed)
    }

    @Test("a surplus in a TLS record behind a response that filled the plaintext buffer is found all the same")
    func surplusBehindFullBuffer() throws {
        let rig = try InterceptRig()
        let (_, _, device, origin) = try rig.intercepted()
        device.send(Self.request + Self.request)
        rig.settle()
        _ = origin.take()
        // Head and body fill the plaintext buffer exactly (four full records): the surplus, in the
        // fifth, is still ciphertext when the body ends.
        let headSize = "HTTP/1.1 200 OK\r\nContent-Length: 00000\r\n\r\n".utf8.count
        let length = TLSByteStream.highWater - headSize
        origin.send(
            "HTTP/1.1 200 OK\r\nContent-Length: \(length)\r\n\r\n" + String(repeating: "x", count: length)
                + ResponseSurplusPlaybookTests.smuggled)
        rig.settle()
        #expect(device.sawEnd)
        #expect(!device.receivedText.contains("SPLIT!"))
        #expect(origin.take().isEmpty, "the second request never went to that origin")
        #expect(rig.environment.requests.first?.upstreamError?.hasPrefix("the origin sent 61 bytes beyond") == true)
    }

    @Test("a HEAD answered with a 44-byte body: the next GET is not failed by it")
    func headBody() throws {
        let rig = try InterceptRig()
        let (_, _, device, origin) = try rig.intercepted()
        let head = "HEAD /v1/items HTTP/1.1\r\nHost: api.example.com\r\n\r\n"
        device.send(head + Self.request)
        rig.settle()
        _ = origin.take()
        origin.send("HTTP/1.1 200 OK\r\nContent-Length: 44\r\n\r\n" + ResponseSurplusPlaybookTests.headBody)
        rig.settle()
        #expect(device.take() == InterceptPlaybookTests.viaProxy("HTTP/1.1 200 OK\r\nContent-Length: 44\r\n\r\n"))
        #expect(device.sawEnd)
        #expect(!rig.environment.requests.contains { $0.status == 502 }, "no 502 from the HTML read as a response")
    }

    @Test(
        "a response Transfer-Encoding that is not a known list ending in chunked: 502 in the device's session, naming it",
        arguments: ["chunked, identity", "xchunked"])
    func refusedTransferEncoding(_ value: String) throws {
        let rig = try InterceptRig()
        let (_, upstream, device, origin) = try rig.intercepted()
        device.send(Self.request)
        rig.settle()
        _ = origin.take()
        origin.send(ExchangeTransferEncodingPlaybookTests.response(value))
        rig.settle()
        let answer = device.take()
        #expect(answer.hasPrefix("HTTP/1.1 502 Bad Gateway\r\n"), "\(answer)")
        #expect(!answer.contains("SPLIT!"))
        #expect(!upstream.isOpen)
        let line = try #require(rig.environment.requests.first)
        #expect(line.status == 502)
        #expect(
            line.upstreamError?.contains("Transfer-Encoding \"\(value)\"") == true,
            "\(String(describing: line.upstreamError))")
    }
}
