"""What outside_rooms.py's scenarios share: the node's pushed envelopes
kept as they come, opened with a room's key, and a link that gets them."""
import struct

from outside_keys import read_membership
from outside_link import Link
from outside_wire import entries, open_body, overlay, read_batch, read_envelope


class Seen:
    """Every envelope the node pushes on a link, kept, so a check can look
    for one that came while it waited for another."""

    def __init__(self, link):
        self.link, self.envelopes = link, []

    async def find(self, match, timeout=20):
        """The first envelope (kept or still to come) for which `match` returns something; that something, or None."""
        def look(envelopes):
            return next((found for e in envelopes if (found := match(e))), None)
        if (found := look(self.envelopes)):
            return found

        def take(message):
            if message[0] != 3:
                return None
            new = [read_envelope(e) for _, e in read_batch(message)]
            self.envelopes += new
            return look(new)
        return await self.link.until(take, timeout)


def opened_in(author, room, key, want):
    """A match for Seen.find: an envelope of `author` in `room` whose body opens with `key` and that `want(kind, content, envelope)` takes."""
    def match(e):
        if e["author"] != author or e["room"] != room or e["form"] != 0:
            return None
        body = open_body(e["body"], author, room, key)
        return body and want(body[0], body[1], e)
    return match


async def linked(node, who, nick, versions=(10, 9, 8, 7, 6, 5, 4, 3, 2, 1)):
    link = await Link(who, nick=nick).open(node.port, versions)
    await link.send(overlay(8, struct.pack(">H", 0)))  # keep: pushes come to us
    await link.send(b"\x01" + entries([]))
    await link.barrier()
    return link, Seen(link)


def membership_of(action):
    """A `want` for opened_in: (envelope, fields) of a membership event (kind 14) with this action."""
    def want(kind, content, e):
        m = read_membership(content) if kind == 14 else None
        return (e, m) if m and m["action"] == action else None
    return want
