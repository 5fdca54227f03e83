"""A DNS responder for one test: answers every query on 127.0.0.1:53 after a delay.

`slow.test` gets an A record 127.0.0.1 (TTL 0, or TTL_S); every other question an
empty answer with an SOA in the authority section (RFC 2308), so a caching resolver
caches that too, for the same TTL.
Runs only inside the network namespace the test made (see tests/findings_dns.rs).
Usage: python3 slow_dns.py DELAY_MS [READY_FILE [ADDR [TTL_S]]]
       (READY_FILE is written once bound; ADDR defaults to 127.0.0.1)
"""
import socket
import struct
import sys
import threading
import time

delay = int(sys.argv[1]) / 1000.0
addr = sys.argv[3] if len(sys.argv) > 3 else "127.0.0.1"
ttl = int(sys.argv[4]) if len(sys.argv) > 4 else 0
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind((addr, 53))
if len(sys.argv) > 2:
    with open(sys.argv[2], "w") as ready:
        ready.write("ready\n")


def answer(query, peer):
    time.sleep(delay)
    (qid,) = struct.unpack("!H", query[:2])
    # The question: labels up to the zero byte, then type and class.
    end = 12
    labels = []
    while query[end] != 0:
        n = query[end]
        labels.append(query[end + 1 : end + 1 + n].decode("ascii", "replace"))
        end += n + 1
    qtype, _ = struct.unpack("!HH", query[end + 1 : end + 5])
    question = query[12 : end + 5]
    name = ".".join(labels).lower()
    answers = b""
    count = authority = 0
    if name == "slow.test" and qtype == 1:
        answers = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, ttl, 4) + bytes([127, 0, 0, 1])
        count = 1
    elif ttl:
        # NODATA with an SOA (root names, serial 1, refresh/retry/expire, minimum =
        # the TTL): the negative answer's TTL.
        soa = b"\x00\x00" + struct.pack("!IIIII", 1, 3600, 600, 86400, ttl)
        answers = b"\xc0\x0c" + struct.pack("!HHIH", 6, 1, ttl, len(soa)) + soa
        authority = 1
    header = struct.pack("!HHHHHH", qid, 0x8180, 1, count, authority, 0)
    sock.sendto(header + question + answers, peer)


while True:
    data, peer = sock.recvfrom(2048)
    threading.Thread(target=answer, args=(data, peer), daemon=True).start()
