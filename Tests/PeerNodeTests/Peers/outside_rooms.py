#!/usr/bin/env python3
"""A peer written from docs/PROTOCOL.md alone, against a real node: what
is sealed. It shares no code with the node (see outside_peer.py; the
keys of §2, §14 and §15 are in outside_keys.py). It starts
`peernode --json` (alice), then:
  direct:  §2 and §5: a direct message both ways in the pair's
           conversation room, and alice's receipt for ours (§13);
  invite:  §14: a "PNIV" invite that alice is shown and accepts, our post
           in the room, alice's post that opens with the room's key; an
           invite naming #general's room id or our conversation's refused;
  members: §14 "Membership and key epochs": alice makes a private room and
           invites us: her create and invite events and her "PNI2" invite,
           the epoch key sealed to our identity; our post at epoch 1 shown;
           a kick we sign as a member changes nothing; alice kicks us: a new
           key sealed to her alone, a limit on our device, and our post
           after the limit refused;
  devices: §15: an account and a device of it: the claim, the device's post
           shown as the account's, alice's direct message to the account
           sealed to the certificate's conversation key and naming the claim,
           a revocation by the account and the device's next post refused, a
           rekey and alice's next direct message sealed to the new epoch.
Prints "ok NAME (T s)" per check, "ALL OK" at the end when every check passed.
usage: outside_rooms.py PEERNODE
"""
import os
import struct
import sys

from checks import check, run_checks
from outside_hostile import counter
from outside_keys import (ACCOUNTS_ID, ACCOUNTS_KEY, box_keypair, certificate, conversation, conversation_with,
                          membership_event, read_invite_v2, read_membership, rekey, seal_open)
from outside_device import as_device
from outside_founding import commits, forged_create, invitee_forger, later_device
from outside_revoked import broken_chain, past_limit_everywhere, revoked_fork
from outside_invitee import declined, invited
from outside_link import Node
from outside_refusals import refusals
from outside_sealed import linked, membership_of, opened_in
from outside_wire import GENERAL_ID, Identity, ed_to_x25519_public, envelopes_message, make_envelope


# The private rooms alice holds, as the scenarios learn them: name → (room id, first key);
# "#plans epoch 1" → (membership event id, key). A device linked later must get them all.
held = {}


async def direct(node):
    me = Identity()
    link, seen = await linked(node, me, b"dora")
    room, key = conversation_with(me, node.id)
    text, text_id = make_envelope(me, 1, b"psst, alice", room=room, key=key)
    await link.send(envelopes_message([text]))
    shown = await node.wait(lambda e: e["type"] == "message" and e["author"] == me.public.hex())
    check("our direct message (its room and key from §2) is shown as one, to alice",
          shown is not None and shown.get("kind") == "dm" and shown.get("to") == node.id.hex() and shown.get("text") == "psst, alice"
          and shown.get("id") == text_id.hex(), shown)
    node.send(f"/msg {me.public.hex()} psst back")
    back = await seen.find(opened_in(node.id, room, key, lambda kind, content, e: (kind, content)
                                     if content == b"psst back" else None))
    check("alice's /msg comes in our conversation's room and opens with its key, kind text", back == (1, b"psst back"), back)

    def names_ours(kind, content, e):
        return kind == 6 and content[:1] in (b"\x01", b"\x02") and content[1:2] == b"\x01" \
            and content[2:] == me.public + struct.pack(">Q", 1)
    receipt = await seen.find(opened_in(node.id, room, key, names_ours), timeout=10)
    check("alice's receipt for it (§13) is in the conversation's room, sealed with its key", receipt, "none within 10 s")
    return me, link, seen


async def invite(node, me, link, seen):
    room, key = conversation_with(me, node.id)
    for name, bad in (("#general's", GENERAL_ID), ("our conversation's", room)):
        forged, _ = make_envelope(me, 7, b"PNIV" + bad + os.urandom(32) + b"#trap", room=room, key=key)
        mark = len(node.events)
        await link.send(envelopes_message([forged]))
        refused = await node.wait(lambda e: e["type"] == "invite_refused", since=mark)
        check(f"an invite naming {name} room id is refused at once", refused is not None and refused.get("room") == "#trap"
              and refused.get("by") == me.public.hex(), refused)
    hideout, hideout_key = os.urandom(32), os.urandom(32)
    held["#hideout"] = (hideout, hideout_key)
    mark = len(node.events)
    offer, _ = make_envelope(me, 7, b"PNIV" + hideout + hideout_key + b"#hideout", room=room, key=key)
    await link.send(envelopes_message([offer]))
    pending = await node.wait(lambda e: e["type"] == "invite", since=mark)
    check("a PNIV invite is shown, pending, until the user answers", pending is not None and pending.get("room") == "#hideout"
          and pending.get("state") == "pending" and pending.get("by") == me.public.hex(), pending)
    node.send("/accept #hideout")
    accepted = await node.wait(lambda e: e["type"] == "invite_accepted", since=mark)
    check("/accept joins it", accepted is not None and accepted.get("room") == "#hideout", accepted)
    post, _ = make_envelope(me, 1, b"in the hideout", room=hideout, key=hideout_key)
    await link.send(envelopes_message([post]))
    shown = await node.wait(lambda e: e["type"] == "message" and e.get("text") == "in the hideout", since=mark)
    check("our post sealed with the room's key is shown in #hideout", shown is not None and shown.get("room") == "#hideout", shown)
    node.send("/join #hideout")
    node.send("only for the hideout")
    answer = await seen.find(opened_in(node.id, hideout, hideout_key, lambda kind, content, e: content == b"only for the hideout"))
    check("alice posts in it under the room's id, sealed with its key", answer, "not pushed")


async def members(node, me, link, seen):
    room, key = conversation_with(me, node.id)
    mark = len(node.events)
    node.send("/private #plans")
    node.send(f"/invite {me.public.hex()} #plans")

    def pni2(kind, content, e):
        return read_invite_v2(content) if kind == 7 else None
    offer = await seen.find(opened_in(node.id, room, key, pni2))
    check("alice's invite is a PNI2 in our conversation, naming #plans", offer is not None and offer[3] == "#plans", offer)
    if offer is None:
        return
    plans, first, keys, _ = offer
    create = await seen.find(opened_in(node.id, plans, first, lambda kind, content, e:
                                       (e, read_membership(content)) if kind == 14 else None))
    created = create and create[1]
    check("the room's create: a membership event (kind 14) sealed with the first key, action create, epoch 0, no keys",
          created is not None and created["action"] == "create" and created["epoch"] == 0 and created["keys"] == [], created)
    check("the room id commits to alice's account and the salt her create carries in its parent field",
          created is not None and commits(plans, node.id, created["parent"]), created and created["parent"].hex())
    by_epoch = {epoch: (event_id, k) for event_id, epoch, k in keys}
    check("the PNI2 carries every key alice holds: epoch 0 (the create's id, the first key) and epoch 1",
          len(keys) == 2 and by_epoch.get(0) == (create[0]["id"], first) and 1 in by_epoch, keys)
    if 1 not in by_epoch:
        return
    event_id, epoch1 = by_epoch[1]
    held["#plans"] = (plans, first)
    held["#plans epoch 1"] = (event_id, epoch1)

    def invite_event(kind, content, e):
        return (e, read_membership(content)) if kind == 14 and e["id"] == event_id else None
    found = await seen.find(opened_in(node.id, plans, first, invite_event))
    event = found and found[1]
    mine = [s for a, epoch, s in (event or {}).get("keys", []) if a == me.public and epoch == 0]
    opened = seal_open(mine[0], ed_to_x25519_public(me.public), me.x_secret) if mine else None
    check("the invite event (sealed with its parent's key): action invite, us, member, epoch 1, parent the create",
          event is not None and event["action"] == "invite" and event["target"] == me.public and event["role"] == 0
          and event["epoch"] == 1 and event["parent"] == create[0]["id"], event)
    check("its key sealed to our identity (conversation epoch 0) opens to the PNI2's epoch-1 key, and one is sealed to alice",
          opened == epoch1 and any(a == node.id for a, _, _ in event["keys"]), (opened and opened.hex(), event and len(event["keys"])))

    post, post_id = make_envelope(me, 1, b"a member now", room=plans, key=epoch1)
    await link.send(envelopes_message([post]))
    shown = await node.wait(lambda e: e["type"] == "message" and e.get("id") == post_id.hex(), since=mark)
    check("our post sealed with the epoch-1 key is shown in #plans", shown is not None and shown.get("room") == "#plans", shown)
    before = len(node.events)
    refused = counter(await node.stats(), "membership_refused")
    forged, _ = make_envelope(me, 14, membership_event(2, node.id, 0, 2, event_id), room=plans, key=epoch1)
    await link.send(envelopes_message([forged]))
    stats = await node.counters_reach({"membership_refused": refused + 1})
    kicked_owner = [e for e in node.events[before:] if e["type"] == "membership" and e.get("by") == me.public.hex()]
    check("a kick of the owner signed by a member does not hold: not shown, counted (membership_refused)",
          kicked_owner == [] and counter(stats, "membership_refused") == refused + 1, (kicked_owner, counter(stats, "membership_refused")))

    await forged_create(node, me, link, plans, epoch1, create[0]["id"], "a current member")

    node.send("/join #plans")
    node.send(f"/kick {me.public.hex()}")
    found = await seen.find(opened_in(node.id, plans, epoch1, membership_of("kick")))
    kick = found and found[1]
    check("the kick: sealed with the epoch-1 key, epoch 2, parent the invite, keys for alice alone, a limit on our device at "
          "the highest sequence alice held of ours",
          kick is not None and kick["target"] == me.public and kick["epoch"] == 2 and kick["parent"] == event_id
          and [a for a, _, _ in kick["keys"]] == [node.id] and kick["limits"] == [(me.public, me.sequence)], kick)
    before = counter(await node.stats(), "room_post_refused")
    late, late_id = make_envelope(me, 1, b"still here?", room=plans, key=epoch1)
    await link.send(envelopes_message([late]))
    stats = await node.counters_reach({"room_post_refused": before + 1})
    check("our post after the kick's limit is refused (room_post_refused), not shown",
          counter(stats, "room_post_refused") > before and not any(e.get("id") == late_id.hex() for e in node.events), before)
    await forged_create(node, me, link, plans, first, create[0]["id"], "a kicked member")
    await later_device(node, me, link, plans, epoch1, first)
    await invitee_forger(node, plans, first, create[0]["id"])


async def devices(node):
    account, device = Identity(), Identity()
    link, seen = await linked(node, device, b"laptop")
    public1, secret1 = box_keypair()
    mark = len(node.events)
    claim, _ = make_envelope(device, 12, certificate(account, device, 1, public1, b"laptop"), room=ACCOUNTS_ID, key=ACCOUNTS_KEY)
    await link.send(envelopes_message([claim]))
    added = await node.wait(lambda e: e["type"] == "device", since=mark)
    check("the device's claim (kind 12 in the accounts room) is accepted and announced",
          added is not None and added.get("account") == account.public.hex() and added.get("device") == device.public.hex()
          and added.get("name") == "laptop", added)
    post, post_id = make_envelope(device, 1, b"from my laptop")
    await link.send(envelopes_message([post]))
    shown = await node.wait(lambda e: e["type"] == "message" and e.get("id") == post_id.hex(), since=mark)
    check("the device's post is shown as the account's, naming the device",
          shown is not None and shown.get("author") == account.public.hex() and shown.get("device") == device.public.hex(), shown)

    room, key = conversation(ed_to_x25519_public(node.id), secret1)
    node.send(f"/msg {account.public.hex()} to all your devices")
    found = await seen.find(opened_in(node.id, room, key, lambda kind, content, e: e if content == b"to all your devices" else None))
    check("alice's direct message to the account is sealed to the certificate's conversation key (epoch 1)", found, "not pushed")
    # §15: every node must hold the key before it delivers the envelope, so
    # the claim is in its causal past: named by it, or by an earlier
    # envelope of alice (§4, dependencies are cumulative along her chain).
    covered = [e for e in seen.envelopes if e["author"] == node.id and e["sequence"] <= found["sequence"]
               and any(a == device.public and s >= 1 for a, s in e["dependencies"])] if found else []
    check("its causal past holds the claim: its dependencies, or an earlier envelope of alice's, name the device",
          covered, found and found["dependencies"])

    # §15: its dependencies name the device at the limit, so every node holds the claim (and all up to the limit) first.
    revocation, _ = make_envelope(account, 13, device.public + struct.pack(">Q", device.sequence), room=ACCOUNTS_ID, key=ACCOUNTS_KEY,
                                  dependencies=[(device.public, device.sequence)])
    await link.send(envelopes_message([revocation]))
    revoked = await node.wait(lambda e: e["type"] == "device_revoked", since=mark)
    check("the account's revocation (kind 13) is kept and announced with its limit",
          revoked is not None and revoked.get("device") == device.public.hex() and revoked.get("by") == account.public.hex()
          and revoked.get("last") == 2, revoked)
    before = counter(await node.stats(), "revoked_refused")
    stolen, stolen_id = make_envelope(device, 1, b"stolen laptop speaking")
    await link.send(envelopes_message([stolen]))
    stats = await node.counters_reach({"revoked_refused": before + 1})
    check("the revoked device's next post is refused (revoked_refused), not shown",
          counter(stats, "revoked_refused") > before and not any(e.get("id") == stolen_id.hex() for e in node.events), before)
    await past_limit_everywhere(node, stolen_id.hex())

    public2, secret2 = box_keypair()
    announcement, _ = make_envelope(account, 15, rekey(2, public2), room=ACCOUNTS_ID, key=ACCOUNTS_KEY)
    await link.send(envelopes_message([announcement]))
    await link.barrier()
    room2, key2 = conversation(ed_to_x25519_public(node.id), secret2)
    node.send(f"/msg {account.public.hex()} after the rekey")
    found = await seen.find(opened_in(node.id, room2, key2, lambda kind, content, e: e if content == b"after the rekey" else None))
    check("after the account's rekey (kind 15), alice seals to epoch 2", found, "not pushed in epoch 2's room")


async def main():
    node = Node(os.path.abspath(sys.argv[1]))
    await node.start("--no-discovery")
    try:
        me, link, seen = await direct(node)
        await invite(node, me, link, seen)
        await members(node, me, link, seen)
        await devices(node)
        await revoked_fork(node)
        await broken_chain(node)
        owner, link, seen = await invited(node)
        await declined(node, owner, link, seen)
        await as_device(node, held)
        await refusals(node)
    finally:
        status = await node.stop()
    check("the node stops cleanly (status 0)", status == 0, status)


run_checks(main, 180)
