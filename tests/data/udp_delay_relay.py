"""A slow path for UDP only, for one test: every datagram is held DELAY_MS each way.

Usage: python3 udp_delay_relay.py READY_FILE UPSTREAM_PORT DELAY_MS
Listens on 127.0.0.1 (a free port, written to READY_FILE once bound) and relays to
127.0.0.1:UPSTREAM_PORT, each client address through an upstream socket of its own
(so replies find their way back). QUIC through it pays 2 x DELAY_MS per round trip
while TCP to the same server goes straight (tests/http3.rs).
"""
import asyncio
import os
import sys

ready, upstream_port, delay = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) / 1000.0
UPSTREAM = ("127.0.0.1", upstream_port)


class Upstream(asyncio.DatagramProtocol):
    """The relay's socket towards the server for one client."""

    def __init__(self, front, client):
        self.front, self.client = front, client

    def datagram_received(self, data, _addr):
        loop = asyncio.get_running_loop()
        loop.call_later(delay, self.front.sendto, data, self.client)


class Front(asyncio.DatagramProtocol):
    """The socket clients send to."""

    def __init__(self):
        self.transport = None
        self.upstreams = {}

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, client):
        asyncio.get_running_loop().call_later(delay, self.forward, data, client)

    def forward(self, data, client):
        up = self.upstreams.get(client)
        if up is None:
            up = asyncio.ensure_future(self.open(client))
            self.upstreams[client] = up
        up.add_done_callback(lambda f: f.result().sendto(data))

    async def open(self, client):
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(
            lambda: Upstream(self.transport, client), remote_addr=UPSTREAM
        )
        return transport


async def main():
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(Front, local_addr=("127.0.0.1", 0))
    with open(ready + ".tmp", "w") as f:
        f.write(f"{transport.get_extra_info('sockname')[1]}\n")
    os.rename(ready + ".tmp", ready)
    await asyncio.Event().wait()


asyncio.run(main())
