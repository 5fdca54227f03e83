"""A DNS responder for one test: answers every query on 127.0.0.1:53 after a delay.

`slow.test` gets an A record 127.0.0.1 (TTL 0); every other name an empty answer.
Runs only inside the network namespace the test made (see tests/findings.rs).
Usage: python3 slow_dns.py DELAY_MS [READY_FILE]   (READY_FILE is written once bound)
"""
import socket
import struct
import sys
import threading
import time

delay = int(sys.argv[1]) / 1000.0
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind(("127.0.0.1", 53))
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
    count = 0
    if name == "slow.test" and qtype == 1:
        answers = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 0, 4) + bytes([127, 0, 0, 1])
        count = 1
    header = struct.pack("!HHHHHH", qid, 0x8180, 1, count, 0, 0)
    sock.sendto(header + question + answers, peer)


while True:
    data, peer = sock.recvfrom(2048)
    threading.Thread(target=answer, args=(data, peer), daemon=True).start()
