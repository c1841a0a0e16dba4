#!/usr/bin/python3
"""A real HTTP/1.1 backend for the demo and the end-to-end tests.

Serves keep-alive HTTP/1.1 on the given ports (IPv4 and IPv6), reads
Content-Length and chunked bodies, answers 200 with a short JSON body, and
appends one JSON line per request to --log: what the backend actually
received, so tests can compare it with what the client sent.
"""

import argparse
import hashlib
import http.server
import json
import socket
import socketserver
import threading
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log_lock = threading.Lock()
    log_file = None

    def _body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length", "0") or 0)
        return self.rfile.read(n) if n else b""

    def _serve(self):
        body = self._body()
        entry = {
            "t": round(time.time(), 4),
            "method": self.command,
            "path": self.path,
            "port": self.server.server_address[1],
            "client": self.client_address[0],
            "headers": [[k, v] for k, v in self.headers.items()],
            "body_len": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(),
        }
        with self.log_lock:
            if self.log_file:
                self.log_file.write(json.dumps(entry) + "\n")
                self.log_file.flush()
        out = json.dumps({"ok": True, "path": self.path}).encode() + b"\n"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

    def log_message(self, fmt, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    address_family = socket.AF_INET6

    def server_bind(self):
        # One dual-stack socket serves both 198.18.0.0/15 and 2001:2::/48.
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, action="append", default=[])
    ap.add_argument("--log")
    a = ap.parse_args()
    if a.log:
        Handler.log_file = open(a.log, "a")
    servers = [Server(("::", p), Handler) for p in (a.port or [80])]
    for s in servers[1:]:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("backend: listening on %s" % ", ".join(str(p) for p in (a.port or [80])), flush=True)
    servers[0].serve_forever()


if __name__ == "__main__":
    main()
