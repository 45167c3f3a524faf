import Crypto
import Gossip
import NetworkText

/// The overlay on the links: discovery and `--peer` feed the membership
/// (`Membership`, HyParView), and what it decides becomes dials, closes and
/// membership messages on links of version 4 on. Links of older versions
/// are kept as they are, outside the bound (their peers link to everyone).
/// docs/PROTOCOL.md §11, "Overlay".
extension LinkCore {
    /// The close reason of a link the overlay does not keep.
    public static let notNeighbourReason = "not a neighbour"

    /// The identity a link carries, also while it loses a tie-break.
    func remote(of id: LinkID) -> PublicKey? { table.links[id]?.remote ?? links[id]?.session.remoteIdentity }

    /// The link that carries `peer` and speaks the overlay.
    func overlayLink(to peer: PublicKey) -> LinkID? {
        table.links.filter { $0.value.remote == peer }.keys.sorted().first { links[$0]?.version.speaksOverlay == true }
    }

    // MARK: events from the shell and the table

    mutating func overlayFound(_ peer: PublicKey, host: String, port: UInt16, now: Double, into out: inout [Effect]) {
        guard let entry = OverlayPeer(identity: peer, host: host, port: port) else { return }
        overlay.learn(entry, fromDiscovery: true)
        overlay.discovered[peer] = now
        note(peer, at: host)
        membership(.known(peer), now: now, into: &out)
    }

    mutating func overlayExpired(_ peer: PublicKey, now: Double, into out: inout [Effect]) {
        overlay.discovered[peer] = nil
        if !table.carries(peer) { membership(.unreachable(peer), now: now, into: &out) }
    }

    /// A link carries `remote` now.
    mutating func overlayUp(_ id: LinkID, remote: PublicKey, now: Double, into out: inout [Effect]) {
        guard let link = links[id], link.version.speaksOverlay else { return }
        if let host = Self.host(of: link.address) { note(remote, at: host, linked: true) }
        if !overlay.configuration.bounded {
            // Unbounded, we keep every link we dial: say so, or a bounded peer
            // would close it after `claimGrace` and we would dial again.
            if table.links[id]?.dialer != nil { send(.overlay(.keep(port: overlay.configuration.port)), on: id, now: now, into: &out) }
            return
        }
        if table.isUserLink(id) {
            overlay.pinned.insert(remote)
            send(.overlay(.keep(port: overlay.configuration.port)), on: id, now: now, into: &out)
            // A peer the user named is a way into the overlay like one discovery found.
            if let host = Self.host(of: link.address), let port = table.links[id]?.dialer.flatMap({ table.dialers[$0]?.port }),
               let entry = OverlayPeer(identity: remote, host: host, port: port) {
                overlay.learn(entry, fromDiscovery: true)
            }
            membership(.known(remote), now: now, into: &out)
        }
        let waiting = overlay.outbox.removeValue(forKey: remote) ?? []
        for message in waiting {
            send(.overlay(message), on: id, now: now, into: &out)
        }
        if waiting.isEmpty, overlay.membership.requested[remote] != nil {
            // Asked on another connection to it, which lost the tie-break to this
            // one: the answer may have gone down with it. Asked again, as urgently
            // as the first time (the peer answers a second ask alike).
            let urgent = overlay.membership.requested[remote]?.urgent == true || overlay.membership.active.isEmpty
            send(.overlay(.neighbor(urgent: urgent, port: overlay.configuration.port)), on: id, now: now, into: &out)
        }
        guard !overlay.wants(remote) else { return }
        if table.links[id]?.dialer != nil, !table.isUserLink(id) {
            // Dialled for the membership, which changed its mind while the dial was on its way.
            count(.overlayUnclaimedClosed)
            out.append(.close(id, .normal, reason: Self.notNeighbourReason))
        } else {
            // Its peer has `claimGrace` to say what it wants (`overlayTick`).
            overlay.unclaimed[id] = now
        }
    }

    /// A link that carried `remote` closed (not as the loser of a tie-break).
    mutating func overlayClosed(_ id: LinkID, remote: PublicKey?, now: Double, into out: inout [Effect]) {
        overlay.budget[id] = nil
        overlay.unclaimed[id] = nil
        guard let remote, !table.carries(remote) else { return }
        if !table.dialers.values.contains(where: { $0.remote == remote && !$0.discovered }) { overlay.pinned.remove(remote) }
        if overlay.isNeighbourOrAsked(remote) {
            count(.overlayPeerLost)
            membership(.unreachable(remote), now: now, into: &out)
        }
    }

    /// A dialler the overlay asked for ended without a link to its peer.
    mutating func overlayReleased(_ peer: PublicKey, now: Double, into out: inout [Effect]) {
        guard !table.carries(peer), overlay.isNeighbourOrAsked(peer) else { return }
        // Another connection to it is open (the other of two dials, before its handshake ends): not gone.
        guard !links.values.contains(where: { $0.session.remoteIdentity == peer }) else { return }
        overlay.outbox[peer] = nil
        membership(.unreachable(peer), now: now, into: &out)
    }

    /// A membership message arrived on a link.
    mutating func overlayReceived(_ message: OverlayMessage, on id: LinkID, now: Double, into out: inout [Effect]) {
        guard overlay.configuration.bounded, let remote = remote(of: id) else { return }
        guard overlay.spend(id, now: now) else { return count(.overlayLimited) }
        count(.overlayReceived)
        // Where the sender listens: this link's host and the port it names.
        let host = links[id].flatMap { Self.host(of: $0.address) }
        if let host { note(remote, at: host, linked: true) }
        func learn(_ port: UInt16) {
            if let host, let entry = OverlayPeer(identity: remote, host: host, port: port) { overlay.learn(entry, fromDiscovery: false) }
        }
        switch message {
        case let .join(port):
            if let last = overlay.joinedAt[remote], now - last < Overlay.joinInterval { return count(.overlayJoinsIgnored) }
            overlay.joinedAt[remote] = now
            learn(port)
            membership(.received(.join, from: remote), via: id, now: now, into: &out)
        case let .forwardJoin(peer, ttl):
            guard peer.identity != me else { break }
            // Only a neighbour walks a join through us (HyParView sends it on
            // active links), and not while many dials are on their way: it
            // may make us dial whoever it names.
            guard overlay.membership.active.contains(remote), table.overlayDialsInFlight < Overlay.maximumDialsInFlight else {
                return count(.overlayForwardJoinDropped)
            }
            overlay.learn(peer, fromDiscovery: false)
            note(peer.identity, at: peer.host)
            membership(.received(.forwardJoin(peer.identity, ttl: ttl), from: remote), via: id, now: now, into: &out)
        case let .neighbor(urgent, port):
            learn(port)
            membership(.received(.neighbor(urgent: urgent), from: remote), via: id, now: now, into: &out)
        case let .neighborReply(accepted):
            let asked = overlay.membership.requested[remote] != nil
            membership(.received(.neighborReply(accepted: accepted), from: remote), via: id, now: now, into: &out)
            if asked, !accepted, !overlay.wants(remote) { closeNotNeighbour(remote, into: &out) }
        case let .disconnect(alive):
            membership(.received(.disconnect(alive: alive), from: remote), via: id, now: now, into: &out)
        case let .shuffle(peers):
            for peer in peers {
                overlay.learn(peer, fromDiscovery: false)
                note(peer.identity, at: peer.host)
            }
            let ids = peers.map(\.identity)
            membership(.received(.shuffle(origin: remote, ttl: 1, peers: ids), from: remote), via: id, now: now, into: &out)
        case let .shuffleReply(peers):
            for peer in peers {
                overlay.learn(peer, fromDiscovery: false)
                note(peer.identity, at: peer.host)
            }
            membership(.received(.shuffleReply(peers: peers.map(\.identity)), from: remote), via: id, now: now, into: &out)
        case let .keep(port):
            learn(port)
            if overlay.pinned.contains(remote) { break }
            if overlay.pinned.count < overlay.configuration.maximumPinned {
                overlay.pinned.insert(remote)
            } else {
                count(.overlayPinnedRefused)
            }
        }
    }

    /// Once a tick: the membership's timeouts, shuffles and healing; links
    /// nobody wants closed after `claimGrace`; peers discovery knows offered again.
    mutating func overlayTick(now: Double, into out: inout [Effect]) {
        guard overlay.configuration.bounded else { return }
        membership(.tick, now: now, into: &out)
        for (id, link) in table.links.sorted(by: { $0.key < $1.key }) {
            guard let remote = link.remote, links[id]?.version.speaksOverlay == true, !overlay.wants(remote) else {
                overlay.unclaimed[id] = nil
                continue
            }
            let since = overlay.unclaimed[id] ?? now
            overlay.unclaimed[id] = since
            if now - since >= Overlay.claimGrace {
                overlay.unclaimed[id] = nil
                count(.overlayUnclaimedClosed)
                out.append(.close(id, .normal, reason: Self.notNeighbourReason))
            }
        }
        if now - overlay.lastRediscover >= Overlay.rediscoverInterval {
            overlay.lastRediscover = now
            let m = overlay.membership
            for peer in overlay.discovered.keys.sorted() where !m.active.contains(peer) && !m.passive.contains(peer) && m.requested[peer] == nil {
                membership(.known(peer), now: now, into: &out)
            }
            overlay.forgetUnused()
            overlay.forgetOldJoins(now: now)
        }
    }

    /// Where `peer` is, for the membership's choices of whom to drop and whom
    /// to ask (`Membership.hosts`): the host its link comes from wins over an
    /// address it was named with.
    private mutating func note(_ peer: PublicKey, at host: String, linked: Bool = false) {
        guard linked || overlay.membership.hosts[peer] == nil else { return }
        overlay.membership.hosts[peer] = host
    }

    // MARK: the membership's decisions

    /// `via`: the link a message came on, where an answer goes when no other
    /// link carries its peer (one losing a tie-break still delivers).
    mutating func membership(_ input: Membership<PublicKey>.Input, via: LinkID? = nil, now: Double, into out: inout [Effect]) {
        guard overlay.configuration.bounded else { return }
        let effects = overlay.membership.handle(input, now: now)
        for effect in effects {
            switch effect {
            case let .link(peer):
                ensureLink(peer, now: now, into: &out)
            case let .unlink(peer):
                overlay.outbox[peer] = nil
                table.release(peer)
                if !overlay.pinned.contains(peer) { closeNotNeighbour(peer, into: &out) }
            case let .send(peer, message):
                deliver(message, to: peer, via: via, now: now, into: &out)
            }
        }
    }

    private mutating func deliver(_ message: Membership<PublicKey>.Message, to peer: PublicKey, via: LinkID?, now: Double, into out: inout [Effect]) {
        let port = overlay.configuration.port
        let wire: OverlayMessage
        var dialsFor = false
        switch message {
        case .join:
            wire = .join(port: port)
            dialsFor = true
        case let .neighbor(urgent):
            wire = .neighbor(urgent: urgent, port: port)
            dialsFor = true
        case let .forwardJoin(joining, ttl):
            guard let entry = overlay.addresses[joining] else { return count(.overlayUndelivered) }
            wire = .forwardJoin(entry, ttl: min(ttl, OverlayMessage.maximumTTL))
        case let .neighborReply(accepted):
            wire = .neighborReply(accepted: accepted)
        case let .disconnect(alive):
            wire = .disconnect(alive: alive)
        case let .shuffle(_, _, peers):
            wire = .shuffle(Array(peers.compactMap { overlay.addresses[$0] }.prefix(OverlayMessage.maximumPeers)))
        case let .shuffleReply(peers):
            wire = .shuffleReply(Array(peers.compactMap { overlay.addresses[$0] }.prefix(OverlayMessage.maximumPeers)))
        }
        if let id = overlayLink(to: peer) ?? via.flatMap({ links[$0] != nil && remote(of: $0) == peer ? $0 : nil }) {
            count(.overlaySent)
            return send(.overlay(wire), on: id, now: now, into: &out)
        }
        // Only a request is worth a dial; a reply or a goodbye to a peer with no link is dropped.
        guard dialsFor, overlay.addresses[peer] != nil, overlay.queue(wire, for: peer) else { return count(.overlayUndelivered) }
        count(.overlaySent)
        ensureLink(peer, now: now, into: &out)
    }

    private mutating func ensureLink(_ peer: PublicKey, now: Double, into out: inout [Effect]) {
        guard !table.carries(peer), let entry = overlay.addresses[peer] else { return }
        follow(table.want(peer, host: entry.host, port: entry.port, now: now), now: now, into: &out)
    }

    private mutating func closeNotNeighbour(_ peer: PublicKey, into out: inout [Effect]) {
        for (id, link) in table.links.sorted(by: { $0.key < $1.key }) where link.remote == peer && links[id]?.version.speaksOverlay == true {
            out.append(.close(id, .normal, reason: Self.notNeighbourReason))
        }
    }

    /// The host part of "host:port".
    static func host(of address: String) -> String? {
        guard let colon = address.lastIndex(of: ":") else { return nil }
        return String(address[..<colon])
    }
}
