"""Python websockets echo server for the benchmarks. Prints "PORT n"."""
import asyncio

import websockets


async def echo(ws):
    async for message in ws:
        await ws.send(message)


async def main():
    async with websockets.serve(echo, "127.0.0.1", 0, max_size=64 << 20, compression=None) as server:
        print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
        await asyncio.Future()


asyncio.run(main())
