#!/usr/bin/python3
"""A real HTTP/1.1 backend for the demo and the end-to-end tests.

Serves keep-alive HTTP/1.1 on the given ports (IPv4 and IPv6), reads
Content-Length and chunked bodies, answers 200 with a short JSON body, and
appends one JSON line per request to --log: what the backend actually
received, so tests can compare it with what the client sent.

For the response-side tests, the query may ask for another answer:
size=N (a body of N bytes, 'a' to 'z' repeated), chunked=1 (sent in
chunks of up to 1000 bytes), status=N, cost=N (X-RateLimit-Cost: N, what
the request cost), cut=N (the head sent in two segments, cut N bytes
into the X-RateLimit-Cost line), delay=S (answered S seconds late, at most
5); HEAD answers with the headers alone.
"""

import argparse
import hashlib
import http.server
import json
import socket
import socketserver
import threading
import time
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # A response's head and body in one write, as nginx sends them: with
    # the head flushed alone, Nagle held the body until the client's
    # delayed ACK (40 ms) of the head, and every keep-alive request waited
    # that long. handle_one_request flushes at the end of each.
    wbufsize = -1
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
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        if "delay" in q:
            time.sleep(min(float(q["delay"][0]), 5.0))
        if "size" in q:
            n = int(q["size"][0])
            out = (bytes(range(ord("a"), ord("z") + 1)) * (n // 26 + 1))[:n]
        else:
            out = json.dumps({"ok": True, "path": self.path}).encode() + b"\n"
        self.send_response(int(q.get("status", ["200"])[0]))
        self.send_header("Content-Type", "application/json")
        if "cost" in q:
            self.send_header("X-RateLimit-Cost", q["cost"][0])
        chunked = q.get("chunked", ["0"])[0] == "1"
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(out)))
        if self.close_connection:
            # the client asked to close: said, as RFC 9112 9.6 has a server
            # say it; unsaid, curl took the connection as kept, sent its
            # next request before the FIN came (now and then under load),
            # and sent it again on a new one when the server reset it
            self.send_header("Connection", "close")
        if "cut" in q:
            self._cut_head(int(q["cut"][0]))
        else:
            self.end_headers()
        if self.command == "HEAD":
            return
        if not chunked:
            self.wfile.write(out)
            return
        for i in range(0, len(out), 1000):
            part = out[i:i + 1000]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
        self.wfile.write(b"0\r\n\r\n")

    def _cut_head(self, n):
        """The head in two segments, cut n bytes into the X-RateLimit-Cost
        line (or after the status line): a reader must read on."""
        self._headers_buffer.append(b"\r\n")
        head = b"".join(self._headers_buffer)
        self._headers_buffer = []
        at = head.find(b"X-RateLimit-Cost")
        at = (at if at >= 0 else head.find(b"\r\n") + 2) + n
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.wfile.write(head[:at])
        self.wfile.flush()
        time.sleep(0.05)
        self.wfile.write(head[at:])

    def handle_expect_100(self):
        # the interim 100 goes at once, not with the final answer
        ok = super().handle_expect_100()
        self.wfile.flush()
        return ok

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _serve

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
