import ATSPolicy

/// One `NSIncludesSubdomains` entry the report proposes in place of several exact ones.
package struct SubdomainFold: Sendable, Equatable {
    /// The parent domain: the entry's key.
    package var domain: String
    /// The relaxations every folded host needs (``SuggestedException/includesSubdomains`` set).
    package var exception: SuggestedException
    /// The observed hosts the entry stands for, sorted.
    package var hosts: [String]
    /// Observed hosts under the domain that need more and keep an exact entry of their own.
    package var keptApart: [String]

    /// Why the fold is honest, in words.
    package var reason: String {
        var text =
            "\(hosts.count) hosts under \(domain) (\(hosts.joined(separator: ", "))) need exactly "
            + exception.summaryWithoutSubdomains + ", and no host seen under it needs less"
        if keptApart.count == 1 { text += "; \(keptApart[0]) needs more and keeps its own entry" }
        if keptApart.count > 1 {
            text += "; " + keptApart.joined(separator: ", ") + " need more and keep their own entries"
        }
        return text
    }
}

/// A parent that was considered and refused, so the report can say why hosts were not folded.
package struct RefusedFold: Sendable, Equatable {
    package var domain: String
    package var reason: String
}

/// Decides where `NSIncludesSubdomains` is the honest summary of several hosts.
///
/// A parent domain is folded when at least two distinct observed hosts under it need the same entry, no observed host
/// under it (or the parent itself) needs less (the fold would loosen it), and the parent belongs to one owner
/// (``SharedSuffixes``). Hosts under it that need more keep exact entries, which win over the parent's (Apple open
/// source: SecProtocolConfiguration.m). Among candidates, the one folding the most hosts is taken first, and of equal
/// ones the deeper (narrower) domain; then the next, over the hosts left.
enum SubdomainFolding {
    /// - Parameter hosts: every name host the report judged, with its needs, except local and
    ///   unreachable ones (which show nothing a fold could loosen); `candidates` those needing an exception.
    static func fold(_ hosts: [(name: String, needs: SuggestedException, wantsEntry: Bool)]) -> (
        folds: [SubdomainFold], refused: [RefusedFold]
    ) {
        var folded: Set<String> = []
        var folds: [SubdomainFold] = []
        var refusedByDomain: [String: String] = [:]
        while true {
            var best: SubdomainFold?
            for parent in candidateParents(hosts.filter { $0.wantsEntry && !folded.contains($0.name) }.map(\.name)) {
                switch evaluate(parent, hosts, excluding: folded) {
                case .refused(let reason):
                    refusedByDomain[parent] = reason
                case .fold(let fold):
                    refusedByDomain[parent] = nil
                    if let current = best, !isBetter(fold, than: current) { continue }
                    best = fold
                case .none:
                    break
                }
            }
            guard let chosen = best else { break }
            folds.append(chosen)
            folded.formUnion(chosen.hosts)
        }
        let foldedDomains = Set(folds.map(\.domain))
        // Of parents refused one inside the other, the deepest says it: the others repeat its reason.
        // A parent above a fold is not worth a line either: its hosts got the deeper entry.
        let inner = Set(refusedByDomain.keys).union(foldedDomains)
        let refused = refusedByDomain.filter { domain, _ in
            !foldedDomains.contains(domain) && !inner.contains { $0.hasSuffix("." + domain) }
        }.map { RefusedFold(domain: $0.key, reason: $0.value) }
        return (folds.sorted { $0.domain < $1.domain }, refused.sorted { $0.domain < $1.domain })
    }

    private enum Outcome {
        case fold(SubdomainFold)
        case refused(String)
        /// Fewer than two hosts under the parent need the same entry: nothing to say.
        case none
    }

    private static func isBetter(_ fold: SubdomainFold, than other: SubdomainFold) -> Bool {
        if fold.hosts.count != other.hosts.count { return fold.hosts.count > other.hosts.count }
        let depth = fold.domain.split(separator: ".").count
        let otherDepth = other.domain.split(separator: ".").count
        if depth != otherDepth { return depth > otherDepth }
        return fold.domain < other.domain
    }

    /// Every proper parent of the names, at least two labels long.
    private static func candidateParents(_ names: [String]) -> [String] {
        var parents: Set<String> = []
        for name in names {
            var labels = name.split(separator: ".", omittingEmptySubsequences: false).dropFirst()
            while labels.count >= 2 {
                parents.insert(labels.joined(separator: "."))
                labels = labels.dropFirst()
            }
        }
        return parents.sorted()
    }

    private static func evaluate(
        _ parent: String, _ hosts: [(name: String, needs: SuggestedException, wantsEntry: Bool)],
        excluding folded: Set<String>
    ) -> Outcome {
        let below = hosts.filter { $0.name.hasSuffix("." + parent) }
        // The entry the fold would write: the need at least two unfolded hosts share, and the least of
        // those (a host needing less than another shared need makes the larger one loosen it).
        var groups: [SuggestedException: [String]] = [:]
        for host in below where host.wantsEntry && !folded.contains(host.name) {
            groups[host.needs, default: []].append(host.name)
        }
        let shared = groups.filter { $0.value.count >= 2 }.keys.sorted { $0.looseness < $1.looseness }
        guard let entry = shared.first else { return .none }
        guard SharedSuffixes.isOwnedDomain(parent) else {
            return .refused("\(parent) is a public or shared suffix: its subdomains belong to different owners")
        }
        let itself = hosts.first { $0.name == parent }
        let everyone = below + (itself.map { [$0] } ?? [])
        let looser = everyone.filter { !$0.needs.covers(entry) }.map(\.name).sorted()
        if !looser.isEmpty {
            let verb = looser.count == 1 ? "needs" : "need"
            return .refused(
                "\(looser.joined(separator: ", ")) under \(parent) \(verb) less than \(entry.summaryWithoutSubdomains): "
                    + "NSIncludesSubdomains would loosen \(looser.count == 1 ? "it" : "them")")
        }
        if let itself, itself.needs != entry {
            return .refused(
                "\(parent) itself needs \(itself.needs.summaryWithoutSubdomains), more than its subdomains' entry")
        }
        let members = everyone.filter { $0.needs == entry && !folded.contains($0.name) }.map(\.name).sorted()
        let apart = below.filter { $0.needs != entry && $0.wantsEntry }.map(\.name).sorted()
        var exception = entry
        exception.includesSubdomains = true
        return .fold(SubdomainFold(domain: parent, exception: exception, hosts: members, keptApart: apart))
    }
}

extension SuggestedException {
    /// ``summary`` without `NSIncludesSubdomains`: the relaxations alone.
    var summaryWithoutSubdomains: String {
        var plain = self
        plain.includesSubdomains = false
        return plain.summary
    }
}
