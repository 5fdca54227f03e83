"""A slow or lossy path for UDP only, for tests: every datagram is held DELAY_MS each way.

Usage: python3 udp_delay_relay.py UPSTREAM_PORT DELAY_MS [K/N]
Listens on 127.0.0.1 (a free port, printed on stdout once bound) and relays to
127.0.0.1:UPSTREAM_PORT, each client address through an upstream socket of its own
(so replies find their way back). QUIC through it pays 2 x DELAY_MS per round trip
while TCP to the same server goes straight (tests/http3_slower.rs).

K/N: of every N new QUIC connections, the first K lose the client's first Initial
datagram (RFC 9000 section 17.2.2), which the client sends again after its probe
timeout. A new connection is a client Initial whose Destination Connection ID the
relay has not seen: neither an earlier client's nor a Source Connection ID the
server chose (the client's later packets carry that one).
"""
import asyncio
import sys

upstream_port, delay = int(sys.argv[1]), int(sys.argv[2]) / 1000.0
UPSTREAM = ("127.0.0.1", upstream_port)
LOSE, OF = (int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "0/1").split("/"))
known = set()  # connection IDs seen
connections = 0


def long_header(data):
    """(type, DCID, SCID) of a QUIC long-header packet, else None."""
    if len(data) < 7 or not data[0] & 0x80:
        return None
    dlen = data[5]
    dcid = bytes(data[6 : 6 + dlen])
    slen = data[6 + dlen] if len(data) > 6 + dlen else 0
    scid = bytes(data[7 + dlen : 7 + dlen + slen])
    return (data[0] & 0x30) >> 4, dcid, scid


def lose(data):
    """Whether this client datagram is a new connection's first Initial to lose."""
    global connections
    h = long_header(data)
    if h is None or h[0] != 0 or h[1] in known:
        return False
    known.add(h[1])
    connections += 1
    return (connections - 1) % OF < LOSE


class Upstream(asyncio.DatagramProtocol):
    """The relay's socket towards the server for one client."""

    def __init__(self, front, client):
        self.front, self.client = front, client

    def datagram_received(self, data, _addr):
        h = long_header(data)
        if h is not None:
            known.add(h[2])
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
        if lose(data):
            return
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
    print(transport.get_extra_info("sockname")[1], flush=True)
    await asyncio.Event().wait()


asyncio.run(main())
