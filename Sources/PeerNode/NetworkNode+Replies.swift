import Crypto
import Gossip
import NodeCore

/// Replies whose answered message is not here yet (issue 17): a reply
/// depends on the message it answers, so nodes of this build deliver that
/// message first; a reply from a node that did not say so is shown with
/// "not here yet" and quoted again once the message comes.
extension NetworkNode {
    /// Replies held for a later quote; past this, a reply is shown without one being filled in.
    static let maximumWaitingReplies = 1_000

    /// `shown` (a reply) with its quote; held if what it answers is not here yet.
    func quoted(_ shown: ShownMessage) -> ShownMessage {
        var shown = shown
        shown.quote(node.quote(of: shown.envelope, shown.opened), book: node.people)
        if let quote = shown.quote, case .missing = quote.state, waitingReplies.values.reduce(0, { $0 + $1.count }) < Self.maximumWaitingReplies {
            waitingReplies[quote.target, default: []].append(shown)
        }
        return shown
    }

    /// A message was delivered: the replies that waited for it, quoted now.
    func repliesFilled(by e: Envelope) -> [NodeEvent] {
        guard !waitingReplies.isEmpty, let waiting = waitingReplies.removeValue(forKey: MessageRef(e)) else { return [] }
        return waiting.map { reply in
            var filled = reply
            filled.quote(node.quote(of: reply.envelope, reply.opened), book: node.people)
            return .replyQuoted(filled)
        }
    }
}
