import ATSPolicy
internal import COpenSSL
import Glibc
import POSIX
import TextFormats

/// A Certificate Transparency log list in the JSON form Apple publishes (`operators`, each with its
/// `logs`: `log_id`, `key`, `description`, `state`), read once; the logs' keys loaded into OpenSSL's
/// store for SCT signature checks. The single owner of the `CTLOG_STORE`, read-only once made and so
/// shared by every thread.
package final class CTLogList: @unchecked Sendable {
    /// One log of the list.
    struct Log: Sendable {
        var description: String
        var logOperator: String
        /// The state's name (`usable`, `qualified`, `readonly`, `retired`, `pending`, `rejected`) and
        /// when it took effect, in seconds since 1970.
        var state: String
        var stateSince: Int64?
    }

    /// The file it came from, for the verdict's words.
    package let name: String
    /// By log id (SHA-256 of the log's key, raw bytes).
    let logs: [[UInt8]: Log]
    let store: OpaquePointer

    /// A list that cannot be used: the file, and what is wrong, with the JSON path at fault.
    package struct ReadError: Error, CustomStringConvertible {
        package var description: String
    }

    /// Reads `path`: Apple's log list JSON (the schema Chrome's v3 list shares).
    package convenience init(path: String) throws(ReadError) {
        let bytes: [UInt8]
        do { bytes = try FileContents.read(path, maximumSize: 16 << 20).bytes } catch {
            throw ReadError(description: "\(path): \(error)")
        }
        try self.init(bytes: bytes, name: path)
    }

    package init(bytes: [UInt8], name: String) throws(ReadError) {
        self.name = name
        let root: JSONValue
        do { root = try JSONValue(parsing: bytes) } catch {
            throw ReadError(description: "\(name): not JSON: \(error)")
        }
        guard let operators = root["operators"]?.arrayValue else {
            throw ReadError(description: "\(name): no \"operators\" array: not a CT log list")
        }
        var logs: [[UInt8]: Log] = [:]
        var keys: [(id: String, key: String, description: String)] = []
        for (index, entry) in operators.enumerated() {
            let operatorName = entry["name"]?.stringValue ?? "operator \(index)"
            for (logIndex, log) in (entry["logs"]?.arrayValue ?? []).enumerated() {
                let at = "operators[\(index)].logs[\(logIndex)]"
                guard let key = log["key"]?.stringValue, let id = log["log_id"]?.stringValue,
                    let idBytes = Base64.decode(id), idBytes.count == 32
                else {
                    throw ReadError(description: "\(name): \(at): needs \"key\" and a 32-byte base64 \"log_id\"")
                }
                let (state, since) = Self.state(log["state"])
                let description = log["description"]?.stringValue ?? id
                logs[idBytes] = Log(
                    description: description, logOperator: operatorName, state: state, stateSince: since)
                keys.append((id, key, description))
            }
        }
        guard !logs.isEmpty else { throw ReadError(description: "\(name): the list names no log") }
        self.logs = logs
        store = try Self.loadStore(keys, name: name)
    }

    deinit { CTLOG_STORE_free(store) }

    /// The state's name and timestamp: `{"usable": {"timestamp": "…"}}`.
    private static func state(_ value: JSONValue?) -> (String, Int64?) {
        guard let (name, detail) = value?.objectValue?.first else { return ("unknown", nil) }
        return (name, detail["timestamp"]?.stringValue.flatMap(DateFormat.parseRFC3339))
    }

    /// OpenSSL loads a log store only from its own configuration file: one is written for the list,
    /// loaded and removed.
    private static func loadStore(_ keys: [(id: String, key: String, description: String)], name: String)
        throws(ReadError) -> OpaquePointer
    {
        guard let store = CTLOG_STORE_new() else { throw ReadError(description: "CTLOG_STORE_new failed") }
        var text = "enabled_logs = " + keys.indices.map { "log\($0)" }.joined(separator: ",") + "\n"
        for (index, entry) in keys.enumerated() {
            let description = entry.description.filter { $0 != "\n" && $0 != "\r" }
            text += "[log\(index)]\ndescription = \(description)\nkey = \(entry.key)\n"
        }
        var template = Array("/tmp/atsproxy-ct-logs-XXXXXX".utf8CString)
        let descriptor = mkstemp(&template)
        guard descriptor >= 0 else {
            CTLOG_STORE_free(store)
            throw ReadError(description: "\(name): no temporary file: \(Errno.message(errno))")
        }
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { unlink(path) }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        guard written == bytes.count, CTLOG_STORE_load_file(store, path) == 1 else {
            CTLOG_STORE_free(store)
            throw ReadError(
                description: "\(name): a log's key is not a public key OpenSSL reads: "
                    + (TLSError.drainErrorQueue().first ?? "unknown error"))
        }
        ERR_clear_error()
        return store
    }

    /// Checks each SCT of `list` (a STACK_OF(SCT)) for the leaf, whose issuer the embedded ones need,
    /// at `time` (seconds): its signature, and its log's state.
    func verify(_ list: OpaquePointer, leaf: X509Certificate, issuer: X509Certificate?, time: Int64) -> [VerifiedSCT] {
        guard let context = CT_POLICY_EVAL_CTX_new() else { return [] }
        defer { CT_POLICY_EVAL_CTX_free(context) }
        _ = CT_POLICY_EVAL_CTX_set1_cert(context, leaf.raw)
        if let issuer { _ = CT_POLICY_EVAL_CTX_set1_issuer(context, issuer.raw) }
        CT_POLICY_EVAL_CTX_set_shared_CTLOG_STORE(context, store)
        CT_POLICY_EVAL_CTX_set_time(context, UInt64(max(0, time)) * 1000)
        var results: [VerifiedSCT] = []
        for index in 0..<OPENSSL_sk_num(list) {
            guard let raw = OPENSSL_sk_value(list, index) else { continue }
            let sct = OpaquePointer(raw)
            _ = SCT_validate(sct, context)
            let valid = SCT_get_validation_status(sct) == SCT_VALIDATION_STATUS_VALID
            var idPointer: UnsafeMutablePointer<UInt8>?
            let idLength = SCT_get0_log_id(sct, &idPointer)
            let id = idPointer.map { Array(UnsafeBufferPointer(start: $0, count: idLength)) } ?? []
            let source: VerifiedSCT.Source =
                switch SCT_get_source(sct) {
                case SCT_SOURCE_TLS_EXTENSION: .tlsExtension
                case SCT_SOURCE_OCSP_STAPLED_RESPONSE: .ocsp
                default: .embedded
                }
            let issued = Int64(SCT_get_timestamp(sct) / 1000)
            guard let log = logs[id] else {
                let hex = id.prefix(8).map { String($0, radix: 16) }.joined()
                results.append(
                    VerifiedSCT(
                        source: source, log: "an unknown log (\(hex)…)", logOperator: nil, approval: .none,
                        signatureValid: false))
                continue
            }
            results.append(
                VerifiedSCT(
                    source: source, log: log.description, logOperator: log.logOperator,
                    approval: Self.approval(log, sctIssued: issued), signatureValid: valid))
        }
        ERR_clear_error()
        return results
    }

    /// Qualified, usable and read-only logs are currently approved; a retired one counts for SCTs it
    /// issued before it retired (once approved); pending and rejected ones never count.
    private static func approval(_ log: Log, sctIssued: Int64) -> VerifiedSCT.Approval {
        switch log.state {
        case "qualified", "usable", "readonly": .current
        case "retired": (log.stateSince.map { sctIssued < $0 } ?? false) ? .once : .none
        default: .none
        }
    }
}
