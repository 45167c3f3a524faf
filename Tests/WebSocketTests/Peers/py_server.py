"""Python `websockets` as an echo server for the peernode WebSocket client.

Prints "PORT n" once listening. Echoes every message; "fragment-me" is
answered in three fragments; "close:CODE:REASON" closes with that code; the
path /refuse answers 403. Records the close code each client sent, and answers
"last-close" with it.
"""
import asyncio
import sys

import websockets
from websockets.http11 import Response
from websockets.datastructures import Headers

last_close = []


async def handler(ws):
    try:
        async for message in ws:
            if message == "fragment-me":
                await ws.send(["one ", "two ", "three"])
            elif message == "last-close":
                await ws.send(str(last_close[-1] if last_close else "none"))
            elif isinstance(message, str) and message.startswith("close:"):
                _, code, reason = message.split(":", 2)
                await ws.close(code=int(code), reason=reason)
            else:
                await ws.send(message)
    finally:
        if ws.close_code is not None:
            last_close.append(f"{ws.close_code}:{ws.close_reason}")


def refuse(connection, request):
    if request.path == "/refuse":
        return connection.respond(403, "no\n")
    return None


async def main():
    async with websockets.serve(handler, "127.0.0.1", 0, subprotocols=["peernode.1"], max_size=None,
                                process_request=refuse) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"PORT {port}", flush=True)
        await asyncio.Future()


asyncio.run(main())
