#!/usr/bin/env python3
"""An origin that redirects and writes down every request's headers
(tests/hostile_redirect.rs).

Usage: redirect_origin.py ADDRESS LOGFILE. Listens on ADDRESS (127.0.0.1, 127.0.0.2,
...), an ephemeral port, printed as the first line on stdout. Serves:
  /to?u=URL   302 to URL (another origin, another scheme, ...)
  /same       302 to /page on this origin
  anything    200, a small cacheable page with an ETag
Each request is appended to LOGFILE as one JSON line {"path", "headers"} (header
names lowercase). Stops after 120 s, or when its parent test dies and stdin closes.
"""
import http.server
import json
import os
import sys
import threading
import urllib.parse

ADDRESS, LOG = sys.argv[1], sys.argv[2]
LOCK = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        with LOCK, open(LOG, "a") as f:
            f.write(json.dumps({
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
            }) + "\n")
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/to":
            target = urllib.parse.parse_qs(url.query)["u"][0]
            self.redirect(target)
        elif url.path == "/same":
            self.redirect("/page")
        else:
            body = b"<!doctype html><title>page</title>" + b"<p>landed</p>\n" * 20
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Cache-Control", "public, max-age=60")
            self.send_header("ETag", '"v1"')
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    do_HEAD = do_GET

    def redirect(self, location):
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()


server = http.server.ThreadingHTTPServer((ADDRESS, 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
watchdog = threading.Timer(120, lambda: os._exit(0))
watchdog.daemon = True
watchdog.start()
try:
    sys.stdin.read()
except Exception:
    pass
