"""A DNS responder for one test: A and HTTPS (RFC 9460) records on 127.0.0.1:53.

Usage: python3 https_rr_dns.py READY_FILE NAME=ALPN[:PORT] ...
Every NAME gets an A record 127.0.0.1; `_8443._https.NAME` (the query name for port
8443, RFC 9460 section 9.1) gets `1 . alpn=ALPN port=PORT` (ALPN comma-separated).
Other names: NXDOMAIN. Runs only inside the network namespace the test made
(tests/http3_dns.rs).
"""
import socket
import struct
import sys

ready, specs = sys.argv[1], sys.argv[2:]
records = {}
for spec in specs:
    name, value = spec.split("=", 1)
    alpn, _, port = value.partition(":")
    records[name] = (alpn.split(","), int(port) if port else None)

sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind(("127.0.0.1", 53))
with open(ready, "w") as f:
    f.write("ready\n")


def https_rdata(alpn, port):
    rdata = struct.pack("!H", 1) + b"\x00"  # ServiceMode, target "." (the origin)
    ids = b"".join(bytes([len(a)]) + a.encode() for a in alpn)
    rdata += struct.pack("!HH", 1, len(ids)) + ids
    if port is not None:
        rdata += struct.pack("!HHH", 3, 2, port)
    return rdata


while True:
    query, peer = sock.recvfrom(2048)
    (qid,) = struct.unpack("!H", query[:2])
    end, labels = 12, []
    while query[end] != 0:
        n = query[end]
        labels.append(query[end + 1 : end + 1 + n].decode("ascii", "replace"))
        end += n + 1
    qtype, _ = struct.unpack("!HH", query[end + 1 : end + 5])
    question = query[12 : end + 5]
    name = ".".join(labels).lower()
    answers, rcode = [], 3
    if name in records:
        rcode = 0
        if qtype == 1:
            answers.append((1, bytes([127, 0, 0, 1])))
    elif name.startswith("_8443._https.") and name[13:] in records:
        rcode = 0
        if qtype == 65:
            answers.append((65, https_rdata(*records[name[13:]])))
    body = b"".join(
        b"\xc0\x0c" + struct.pack("!HHIH", t, 1, 60, len(r)) + r for t, r in answers
    )
    header = struct.pack("!HHHHHH", qid, 0x8180 | rcode, 1, len(answers), 0, 0)
    sock.sendto(header + question + body, peer)
