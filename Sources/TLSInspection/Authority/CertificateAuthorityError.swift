/// Why a CA could not be created or loaded, naming the file at fault.
package struct CertificateAuthorityError: Error, Sendable, CustomStringConvertible {
    package enum Problem: Sendable {
        case missing
        /// The file exists but cannot be read (the system's words).
        case unreadable(String)
        /// No PEM certificate or key could be read from it (OpenSSL's words).
        case notPEM(String)
        /// `ca.key` is not the private key of `ca.pem`.
        case keyMismatch(certificate: String)
        /// The certificate cannot issue: what it lacks.
        case notCA(String)
        /// The certificate's notAfter has passed (seconds since 1970).
        case expired(notAfter: Int64)
        /// `ca.key` may be read by group or others (its permission bits).
        case keyReadableByOthers(mode: UInt32)
        /// `create` found a CA already there and was not told to replace it.
        case exists
        /// Creating the directory or writing the file failed (the system's words).
        case cannotWrite(String)
        /// OpenSSL could not make the key or certificate.
        case openSSL(TLSError)
    }

    /// The file (or directory) at fault.
    package var path: String
    package var problem: Problem

    package init(path: String, problem: Problem) {
        self.path = path
        self.problem = problem
    }

    package var description: String {
        switch problem {
        case .missing: return "\(path): no such file"
        case .unreadable(let reason): return "\(path): cannot read: \(reason)"
        case .notPEM(let reason): return "\(path): not PEM: \(reason)"
        case .keyMismatch(let certificate): return "\(path): not the private key of \(certificate)"
        case .notCA(let lack): return "\(path): not a CA certificate: \(lack)"
        case .expired(let notAfter): return "\(path): the CA certificate expired at \(notAfter) (seconds since 1970)"
        case .keyReadableByOthers(let mode):
            return
                "\(path): refusing ca.key readable by group or others (mode \(String(mode & 0o777, radix: 8, uppercase: false).leftPadded(to: 4))): chmod 600 \(path)"
        case .exists:
            return
                "\(path): a CA already exists here (replace it with --force; its devices must then trust the new one)"
        case .cannotWrite(let reason): return "\(path): cannot write: \(reason)"
        case .openSSL(let error): return "\(path): \(error)"
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: Swift.max(0, width - count)) + self
    }
}
