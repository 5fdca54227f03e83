#!/usr/bin/env python3
"""An origin for the cache conformance suite (tests/caches.rs).

Serves /v/<variant>/<anything> with the response headers of that variant (see
VARIANTS), answers If-None-Match with 304 where the variant has an ETag, and counts,
per path, the full responses and the 304s it sent; GET /_count/<path> (asked
directly, never through the cache) answers "full cond". Listens on 127.0.0.1, an
ephemeral port, written to the file given as the only argument once listening.
Stops after 300 s, or when its parent test dies and stdin closes.
"""
import email.utils
import http.server
import os
import sys
import threading
import time

LM = email.utils.formatdate(time.time() - 10 * 86400, usegmt=True)
PAST = email.utils.formatdate(time.time() - 3600, usegmt=True)
BODY = b"<!doctype html><title>origin</title>" + b"<p>cache conformance</p>\n" * 60

# variant -> (headers, has an ETag answered with 304)
VARIANTS = {
    "public": ([("Cache-Control", "public, max-age=600")], True),
    "public-cookie": ([("Cache-Control", "public, max-age=600")], True),
    "nocache-etag": ([("Cache-Control", "no-cache")], True),
    "maxage0-etag": ([("Cache-Control", "max-age=0, must-revalidate")], True),
    "maxage0": ([("Cache-Control", "max-age=0, must-revalidate")], False),
    "none": ([], False),
    "etag-only": ([], True),
    "lm-only": ([("Last-Modified", LM)], False),
    "private": ([("Cache-Control", "private, max-age=600")], True),
    "no-store": ([("Cache-Control", "no-store")], False),
    "expires-past": ([("Expires", PAST)], False),
    "smaxage1": ([("Cache-Control", "public, s-maxage=1, max-age=0")], True),
    "smaxage1-cookie": ([("Cache-Control", "public, s-maxage=1, max-age=0")], True),
    "vary-ua": ([("Cache-Control", "public, max-age=600"), ("Vary", "User-Agent")], True),
    "vary-star": ([("Cache-Control", "public, max-age=600"), ("Vary", "*")], False),
    # As public, but the origin takes 60 ms (a cache's hits are then far faster).
    "public-slow": ([("Cache-Control", "public, max-age=600")], True),
    # A 304 that carries a body (curl: "Excess found"): breaks keep-alive framing.
    "304-body": ([("Cache-Control", "public, max-age=600")], True),
}

counts = {}
lock = threading.Lock()
sessions = [0]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.startswith("/_count/"):
            full, cond = counts.get(self.path[len("/_count"):], (0, 0))
            return self.reply(200, [("Cache-Control", "no-store")], f"{full} {cond}".encode())
        parts = self.path.split("/")
        variant = parts[2] if len(parts) > 2 else ""
        if variant not in VARIANTS:
            return self.reply(404, [], b"no such variant\n")
        headers, etag = VARIANTS[variant]
        if variant == "public-slow":
            time.sleep(0.06)
        headers = list(headers)
        tag = '"v-' + variant + '"'
        if etag:
            headers.append(("ETag", tag))
        if "cookie" in variant:
            with lock:
                sessions[0] += 1
                sid = "%016x" % (sessions[0] * 0x9E3779B97F4A7C15 % (1 << 64))
            headers.append(("Set-Cookie", "SESSID=" + sid + "; Path=/; HttpOnly"))
        with lock:
            full, cond = counts.get(self.path, (0, 0))
            if etag and self.headers.get("If-None-Match") == tag:
                counts[self.path] = (full, cond + 1)
                return self.reply(304, headers, b"")
            counts[self.path] = (full + 1, cond)
        self.reply(200, headers + [("Content-Type", "text/html")], BODY)

    def reply(self, status, headers, body):
        if status == 304 and "/304-body/" in self.path:
            body = BODY
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        if status != 304 or body:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = sys.argv[1] + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, sys.argv[1])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    deadline = time.time() + 300

    def watch_stdin():
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    while time.time() < deadline:
        time.sleep(0.5)
    os._exit(0)


if __name__ == "__main__":
    main()
