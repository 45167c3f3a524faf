"""§14 "Who founded the room" and "Removals cut the account", from the
document alone: a private room's id commits to its founder, so a `create`
that anyone else signs, ground to an id below the founder's, changes
nothing; and a device an account claims after its kick has none of its
room posts shown, back-dated or not."""
import os
import time

from checks import check
from outside_hostile import counter
from outside_revoked import listed
from outside_keys import ACCOUNTS_ID, ACCOUNTS_KEY, box_keypair, certificate, conversation_with, membership_event, read_invite_v2
from outside_sealed import linked, opened_in
from outside_wire import Identity, blake2b256, envelopes_message, make_envelope

# A forger tries this many fresh signatures (each has a new nonce, so a new
# id) for one whose id is below the founder's create; it needs two on average.
GRIND_TRIES = 200_000


def commits(room, founder, salt):
    """§14: room id = BLAKE2b-256("peernode/3 private-room" ‖ 0x00 ‖ founder ‖ salt)."""
    return room == blake2b256(b"peernode/3 private-room\x00" + founder + salt)


def ground(who, kind, content, room, key, below, timestamp=None):
    """`who` signs `content` until the envelope's id is below `below`
    (its chain moves on by that one envelope only); (bytes, id)."""
    sequence, last = who.sequence, who.last_id
    best = None
    for _ in range(GRIND_TRIES):
        who.sequence, who.last_id = sequence, last
        data, message_id = make_envelope(who, kind, content, room=room, key=key, timestamp=timestamp)
        if best is None or message_id < best[1]:
            best = (data, message_id, who.sequence, who.last_id)
        if message_id < below:
            break
    data, message_id, who.sequence, who.last_id = best
    return data, message_id


async def members_of(node, room):
    """/members of `room` (opened first) on the node: {account hex: state}."""
    mark = len(node.events)
    node.send(f"/join {room}")
    node.send("/members")
    # The node answers in order: every member line comes before the answer to the /stats sent after.
    node.send("/stats")
    await node.wait(lambda e: e["type"] == "stats", since=mark)
    return {e["id"]: e["role"] for e in node.events[mark:] if e["type"] == "room_member"}


async def forged_create(node, who, link, plans, key, create_id, label):
    """`who` (a member, or a kicked one) signs a create with a smaller id
    than the founder's: the node refuses it and its members, roles and own
    posts go on as before."""
    before = await members_of(node, "#plans")
    refused = counter(await node.stats(), "membership_refused")
    content = membership_event(0, who.public, 2, 0, os.urandom(32))
    data, forged_id = ground(who, 14, content, plans, key, create_id)
    check(f"{label}: its create, ground to an id below the founder's", forged_id < create_id, forged_id.hex())
    mark = len(node.events)
    await link.send(envelopes_message([data]))
    stats = await node.counters_reach({"membership_refused": refused + 1})
    shown = [e for e in node.events[mark:] if e["type"] == "membership"]
    check(f"{label}: the forged create does not hold (membership_refused), and nothing about it is shown",
          counter(stats, "membership_refused") == refused + 1 and shown == [], (counter(stats, "membership_refused"), shown))
    after = await members_of(node, "#plans")
    check(f"{label}: /members is unchanged, alice still the owner", after == before and after.get(node.id.hex()) == "owner", (before, after))
    text = f"still alice's room {os.urandom(3).hex()}"
    mark = len(node.events)
    node.send("/join #plans")
    node.send(text)
    mine = await node.wait(lambda e: e["type"] == "message" and e.get("text") == text, since=mark, timeout=10)
    errors = [e for e in node.events[mark:] if e["type"] == "error"]
    check(f"{label}: alice still posts in #plans (no 'no longer a member')", mine is not None and errors == [], errors)


async def later_device(node, account, link, plans, epoch1, first):
    """After the kick, the account certifies a new device: its posts in the
    room, sealed with the old epoch's key or the first key, back-dated or
    not, are refused."""
    laptop = Identity()
    public, _ = box_keypair()
    mark = len(node.events)
    claim, _ = make_envelope(laptop, 12, certificate(account, laptop, 1, public, b"later"), room=ACCOUNTS_ID, key=ACCOUNTS_KEY)
    await link.send(envelopes_message([claim]))
    added = await node.wait(lambda e: e["type"] == "device" and e.get("device") == laptop.public.hex(), since=mark)
    check("the kicked account's new device is claimed (its claim is valid)", added is not None, "no device event")
    before = counter(await node.stats(), "room_post_refused")
    now = int(time.time() * 1000)
    posts = []
    for key, when in ((epoch1, now), (epoch1, now - 3_600_000), (first, now - 86_400_000)):
        data, post_id = make_envelope(laptop, 1, b"from a device claimed after the kick", room=plans, key=key, timestamp=when)
        posts.append((data, post_id))
    await link.send(envelopes_message([d for d, _ in posts]))
    stats = await node.counters_reach({"room_post_refused": before + len(posts)})
    ids = {i.hex() for _, i in posts}
    shown = [e for e in node.events[mark:] if e.get("id") in ids]
    check("its posts in #plans (the old epoch's key, the first key, back-dated an hour and a day) are refused, none shown",
          counter(stats, "room_post_refused") >= before + len(posts) and shown == [], (counter(stats, "room_post_refused") - before, shown))
    rows = await listed(node, ids, room="#plans")
    check("/history lists none of them", rows == [], rows)



async def invitee_forger(node, plans, first, create_id):
    """Alice invites a second identity of ours, which declines (a leave,
    as §14 says a declined invite signs) and then signs a create of its
    own with the first key it was given, ground below the founder's."""
    erin = Identity()
    link, seen = await linked(node, erin, b"erin")
    room, key = conversation_with(erin, node.id)
    node.send("/join #plans")
    node.send(f"/invite {erin.public.hex()} #plans")

    def pni2(kind, content, e):
        return read_invite_v2(content) if kind == 7 else None
    offer = await seen.find(opened_in(node.id, room, key, pni2))
    check("an invitee gets the PNI2 with the room's keys", offer is not None and offer[0] == plans and offer[1] == first, offer)
    if offer is None:
        return
    event_id, epoch, epoch_key = max(offer[2], key=lambda k: k[1])
    leave, _ = make_envelope(erin, 14, membership_event(5, erin.public, 0, epoch, event_id, (), [(erin.public, erin.sequence + 1)]),
                             room=plans, key=epoch_key)
    mark = len(node.events)
    await link.send(envelopes_message([leave]))
    left = await node.wait(lambda e: e["type"] == "membership" and e.get("action") == "leave" and e.get("by") == erin.public.hex(), since=mark)
    check("its leave (it declined) holds", left is not None, node.events[-3:])
    await forged_create(node, erin, link, plans, first, create_id, "an invitee who declined")
    await link.close()
