"""What outside_rooms.py sends that the document says a node refuses
inside a valid envelope (§4, §5, §13–§15): each refusal by the counter
the document names, or, where it names none, by the event that does not
come while a good one after it does."""
import os
import struct

from checks import check
from outside_hostile import counter
from outside_keys import ACCOUNTS_ID, ACCOUNTS_KEY, box_keypair, certificate, conversation_with, rekey
from outside_sealed import linked
from outside_wire import Identity, envelopes_message, make_envelope


async def counted(node, link, name, envelopes, what):
    """Sends `envelopes`; the node must count exactly one `name` for them."""
    before = counter(await node.stats(), name)
    await link.send(envelopes_message(envelopes))
    await node.counters_reach({name: before + 1}, timeout=10)
    await link.barrier()
    got = counter(await node.stats(), name) - before
    check(f"refused, counted {name}: {what}", got == 1, got)


def claim(device, account, epoch=1, signer=None, name=b"phone", for_device=None):
    """A device claim (kind 12) by `device` for `account`; `signer` signs the
    certificate in the account's place, `for_device` is named in it instead."""
    cert = certificate(signer or account, for_device or device, epoch, box_keypair()[0], name)
    if signer is not None:  # the account's key in the first 32 bytes, another's signature
        cert = account.public + cert[32:]
    return make_envelope(device, 12, cert, room=ACCOUNTS_ID, key=ACCOUNTS_KEY)[0]


async def refusals(node):
    me = Identity()
    link, _ = await linked(node, me, b"mallory")

    # §2, §4, §5: nicks, edits, reactions.
    await counted(node, link, "bad_nick", [make_envelope(me, 3, "bob·k3fq".encode())[0]], "a nick change with the separator dot")
    await counted(node, link, "bad_nick", [make_envelope(me, 3, b"n" * 33)[0]], "a nick change of 33 bytes")
    other = Identity()
    text, text_id = make_envelope(other, 1, b"mine alone")
    reference = other.public + struct.pack(">Q", 1) + text_id
    await counted(node, link, "edit_refused", [text, make_envelope(me, 9, reference + b"yours now")[0]],
                  "an edit of another author's message")
    await counted(node, link, "reaction_refused", [make_envelope(me, 10, reference + b"x" * 33)[0]], "a reaction of 33 bytes")
    await counted(node, link, "reaction_refused", [make_envelope(me, 10, reference + b"a b")[0]], "a reaction with a space")

    # §15 claims: each rule of "The accounts room and device claims".
    account, device = Identity(), Identity()
    await counted(node, link, "device_refused", [claim(device, account, signer=Identity())],
                  "a certificate the account did not sign")
    await counted(node, link, "device_refused", [claim(device, account, for_device=Identity())],
                  "a certificate for another device than the claim's author")
    await counted(node, link, "device_refused", [claim(Identity(), account, epoch=0)], "a certificate of conversation epoch 0")
    await counted(node, link, "device_refused", [claim(Identity(), account, name=b"two words")],
                  "a certificate whose name breaks the nick rules")
    mark = len(node.events)
    await link.send(envelopes_message([claim(device, account)]))
    accepted = await node.wait(lambda e: e["type"] == "device" and e.get("device") == device.public.hex(), since=mark)
    check("a good claim after them is accepted", accepted is not None, accepted)
    await counted(node, link, "device_refused", [claim(device, Identity())], "a second claim by a device (the first counts forever)")
    await counted(node, link, "device_refused", [claim(Identity(), device)], "a claim for an account that is itself a device")
    await counted(node, link, "device_refused", [claim(account, Identity())], "a claim by an account that has devices")

    # §15 revocations and rekeys.
    stranger = Identity()
    await counted(node, link, "revoke_refused",
                  [make_envelope(stranger, 13, device.public + struct.pack(">Q", 1), room=ACCOUNTS_ID, key=ACCOUNTS_KEY)[0]],
                  "a revocation by someone outside the device's account")
    await counted(node, link, "revoke_refused",
                  [make_envelope(device, 13, account.public + struct.pack(">Q", 1), room=ACCOUNTS_ID, key=ACCOUNTS_KEY)[0]],
                  "a device revoking its account key")
    await counted(node, link, "rekey_refused",
                  [make_envelope(device, 15, rekey(2, box_keypair()[0]), room=ACCOUNTS_ID, key=ACCOUNTS_KEY)[0]],
                  "a rekey signed by a device, not the account key")
    await counted(node, link, "rekey_refused",
                  [make_envelope(account, 15, rekey(1, box_keypair()[0]), room=ACCOUNTS_ID, key=ACCOUNTS_KEY)[0]],
                  "a rekey of an epoch the account already announced")

    # §14: what is not exactly an invite is not one.
    room, key = conversation_with(me, node.id)
    mark = len(node.events)
    bad = [b"PNIV" + os.urandom(64) + b"#a b",
           b"PNIV" + os.urandom(64),
           b"PNI2" + os.urandom(64) + struct.pack(">H", 901) + os.urandom(68 * 901) + b"#many"]
    await link.send(envelopes_message([make_envelope(me, 7, body, room=room, key=key)[0] for body in bad]))
    await link.send(envelopes_message([make_envelope(me, 7, b"PNIV" + os.urandom(64) + b"#fine", room=room, key=key)[0]]))
    shown = await node.wait(lambda e: e["type"] == "invite" and e.get("room") == "#fine", since=mark)
    invites = [e.get("room") for e in node.events[mark:] if e["type"] in ("invite", "invite_refused")]
    check("invites with a bad room name, no name, or 901 keys are not invites; a good one after them is shown",
          shown is not None and invites == ["#fine"], invites)
