"""§14 from the other side, for outside_rooms.py: we make a private room
with membership events built from the document alone and invite the node
to it. The node accepts, reads what was posted before it came, posts with
the epoch's key, and after we kick it opens nothing newer; a second room
it declines, and the leave it signs is read field by field."""
import os

from checks import check
from outside_keys import conversation_with, invite_v2, membership_event, seal_to
from outside_sealed import linked, membership_of, opened_in
from outside_wire import Identity, blake2b256, ed_to_x25519_public, envelopes_message, make_envelope


def sealed_keys(accounts, key):
    """The keys of a membership event: `key` sealed to each account's
    conversation epoch 0, listed in the order given."""
    return [(a, 0, seal_to(ed_to_x25519_public(a), key)) for a in accounts]


async def offer_room(node, owner, link, name):
    """Posts a create, an invite event for the node (its key sealed to the
    node and to us, in descending order: the document sets no order), a post
    at epoch 1, and the PNI2 invite. Returns (room, first key, invite event id, epoch-1 key)."""
    # §14: the room id commits to its founder and a salt the create carries as its parent.
    salt, first, key1 = os.urandom(32), os.urandom(32), os.urandom(32)
    room = blake2b256(b"peernode/3 private-room\x00" + owner.public + salt)
    create, create_id = make_envelope(owner, 14, membership_event(0, owner.public, 2, 0, salt), room=room, key=first)
    accounts = sorted([owner.public, node.id], reverse=True)
    event, event_id = make_envelope(owner, 14, membership_event(1, node.id, 0, 1, create_id, sealed_keys(accounts, key1)),
                                    room=room, key=first)
    before, _ = make_envelope(owner, 1, b"before you came", room=room, key=key1)
    dm_room, dm_key = conversation_with(owner, node.id)
    offer, _ = make_envelope(owner, 7, invite_v2(room, first, [(create_id, 0, first), (event_id, 1, key1)], name),
                             room=dm_room, key=dm_key)
    await link.send(envelopes_message([create, event, before, offer]))
    return room, first, event_id, key1


async def invited(node):
    owner = Identity()
    link, seen = await linked(node, owner, b"olga")
    mark = len(node.events)
    crew, _, invite_id, key1 = await offer_room(node, owner, link, "#crew")
    pending = await node.wait(lambda e: e["type"] == "invite" and e.get("room") == "#crew", since=mark)
    check("our PNI2 invite (create, invite event, keys sealed from the document) is shown pending",
          pending is not None and pending.get("by") == owner.public.hex() and pending.get("state") == "pending", pending)
    node.send("/accept #crew")
    accepted = await node.wait(lambda e: e["type"] == "invite_accepted" and e.get("room") == "#crew", since=mark)
    check("/accept joins #crew", accepted is not None, accepted)
    node.send("/join #crew")
    node.send("/history")
    history = await node.wait(lambda e: e["type"] == "message" and e.get("text") == "before you came", since=mark)
    check("the node reads what was posted at epoch 1 before it accepted", history is not None and history.get("room") == "#crew", history)
    node.send("hello crew")
    post = await seen.find(opened_in(node.id, crew, key1, lambda kind, content, e: e if content == b"hello crew" else None))
    check("the node posts in #crew sealed with the epoch-1 key it opened from our event", post, "not pushed")

    held = max(e["sequence"] for e in seen.envelopes if e["author"] == node.id)
    key2 = os.urandom(32)
    kick, _ = make_envelope(owner, 14, membership_event(2, node.id, 0, 2, invite_id, sealed_keys([owner.public], key2), [(node.id, held)]),
                            room=crew, key=key1)
    after, after_id = make_envelope(owner, 1, b"after you left", room=crew, key=key2)
    await link.send(envelopes_message([kick, after]))
    kicked = await node.wait(lambda e: e["type"] == "membership" and e.get("action") == "kick", since=mark)
    check("our kick holds on the node and is shown: by us, of it, epoch 2",
          kicked is not None and kicked.get("by") == owner.public.hex() and kicked.get("target") == node.id.hex()
          and kicked.get("epoch") == 2 and kicked.get("room") == "#crew", kicked)
    await link.barrier()
    check("what we post with the epoch-2 key (sealed to us alone) is not shown on the node",
          not any(e.get("id") == after_id.hex() for e in node.events), "shown")
    posted = len([e for e in seen.envelopes if e["author"] == node.id and e["room"] == crew])
    node.send("am I still in?")
    refused = await node.wait(lambda e: e["type"] == "error", since=mark)
    await link.barrier()
    check("once kicked, the node refuses to post in #crew and signs nothing more there",
          refused is not None and "no longer a member" in refused.get("error", "")
          and len([e for e in seen.envelopes if e["author"] == node.id and e["room"] == crew]) == posted, refused)
    return owner, link, seen


async def declined(node, owner, link, seen):
    mark = len(node.events)
    gang, _, invite_id, key1 = await offer_room(node, owner, link, "#gang")
    pending = await node.wait(lambda e: e["type"] == "invite" and e.get("room") == "#gang", since=mark)
    check("a second invite is shown pending", pending is not None, pending)
    node.send("/decline #gang")
    found = await seen.find(opened_in(node.id, gang, key1, membership_of("leave")))
    event = found and found[1]
    check("/decline signs a leave in the room, sealed with the invite's epoch-1 key: of itself, epoch 1, parent our invite "
          "event, no keys, its own device limited at the leave's own sequence",
          event is not None and event["target"] == node.id and event["epoch"] == 1 and event["parent"] == invite_id
          and event["keys"] == [] and event["limits"] == [(node.id, found[0]["sequence"])], event)
