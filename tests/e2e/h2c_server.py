#!/usr/bin/python3
"""A backend that takes HTTP/1.1's upgrade to h2c (RFC 7540 3.2), on the
h2 library: after its 101 it reads HTTP/2 streams on the same
connection, each a request. And CONNECT, as a proxy in front of itself
would: after its 200 every request in the tunnel is served. And, under
/static/, Content-Length ignored (CL.0, as some servers do for
endpoints that take no body): what follows a head is the next request.
And, on a connection begun under /headget/, requests in turn with HEAD
answered as GET, its body a 101 status line; under /headlate/ the same,
the body sent only once the next request came (a body the client held
back with its window). Plain HTTP/1.1 requests are served in turn on
their connection. Prints "up" once listening, and writes one line
to LOG per request it served: "KEY PATH h1|h2|tunnel|cl0|headget".

usage: h2c_server.py ADDRESS PORT LOG
"""

import posixpath
import socket
import sys
import threading
import urllib.parse

import h2.config
import h2.connection
import h2.events
import h2.exceptions

LOCK = threading.Lock()
LOG = open(sys.argv[3], "a", buffering=1)


def said(key, path, proto, method=""):
    with LOCK:
        LOG.write("%s %s %s %s\n" % (key, path, proto, method) if method else
                  "%s %s %s\n" % (key, path, proto))


def fields(head):
    lines = head.split(b"\r\n")
    out = {}
    for ln in lines[1:]:
        if b":" in ln:
            n, v = ln.split(b":", 1)
            out[n.strip().lower()] = v.strip()
    return lines[0].split(b" ")[1].decode(), out


def h2_reply(conn, sid):
    body = b"h2c ok\n"
    conn.send_headers(sid, [(":status", "200"), ("content-length", str(len(body)))])
    conn.send_data(sid, body, end_stream=True)


def serve_h2(c, path, hdrs, rest):
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    conn.initiate_upgrade_connection(hdrs.get(b"http2-settings", b""))
    # stream 1 is the upgraded request itself
    said(hdrs.get(b"x-api-key", b"-").decode(), path, "h1")
    h2_reply(conn, 1)
    c.sendall(conn.data_to_send())
    data = rest
    while True:
        if data:
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.RequestReceived):
                    h = {k.decode() if isinstance(k, bytes) else k:
                         v.decode() if isinstance(v, bytes) else v for k, v in ev.headers}
                    said(h.get("x-api-key", "-"), h.get(":path", "-"), "h2")
                    h2_reply(conn, ev.stream_id)
            c.sendall(conn.data_to_send())
        data = c.recv(65536)
        if not data:
            return


def read_head(c, data):
    """(head, what follows it), reading on from data; None at the end."""
    while b"\r\n\r\n" not in data:
        x = c.recv(4096)
        if not x:
            return None
        data += x
    return data.split(b"\r\n\r\n", 1)


def serve_tunnel(c, data):
    """HTTP/1.1 requests inside a CONNECT tunnel, answered in turn."""
    while True:
        got = read_head(c, data)
        if got is None:
            return
        head, data = got
        path, hdrs = fields(head)
        said(hdrs.get(b"x-api-key", b"-").decode(), path, "tunnel")
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\ntunnel ok\n")


def serve_cl0(c, head, data):
    """Requests in turn, each head's Content-Length ignored."""
    while True:
        path, hdrs = fields(head)
        said(hdrs.get(b"x-api-key", b"-").decode(), path, "cl0",
             head.split(b" ", 1)[0].decode(errors="replace"))
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\ncl0 ok\n")
        got = read_head(c, data.lstrip(b"\r\n"))
        if got is None:
            return
        head, data = got


def serve_headget(c, head, data, late):
    """Requests in turn; HEAD answered as GET, its body a 101 status line
    (a handler that serves HEAD as GET, echoing), sent behind its head
    or, when late, only once the next request came."""
    body = b""
    while True:
        path, hdrs = fields(head)
        said(hdrs.get(b"x-api-key", b"-").decode(), path, "headget")
        if head.startswith(b"HEAD "):
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 36\r\n\r\n")
            body = b"HTTP/1.1 101 Switching Protocols\r\n\r\n"
        else:
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhg ok\n")
        if body and not late:
            c.sendall(body)
            body = b""
        got = read_head(c, data)
        if got is None:
            return
        if body:
            c.sendall(body)
            body = b""
        head, data = got


def served_as(head, path, hdrs):
    """The method as Symfony serves it: a POST's X-HTTP-Method-Override
    (PHP reads X_HTTP_METHOD_OVERRIDE as the same field), else its
    _method query parameter (names as PHP registers them), upper-cased."""
    method = head.split(b" ", 1)[0].decode().upper()
    if method != "POST":
        return method
    for name in (b"x-http-method-override", b"x_http_method_override"):
        if hdrs.get(name):
            return hdrs[name].decode().upper()
    query = path.split("?", 1)[1] if "?" in path else ""
    for name, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
        if name.lstrip(" ").replace(".", "_").replace(" ", "_").replace("[", "_") == "_method":
            method = value.upper()
    return method


def routed_by(path, hdrs):
    """The path as Zend Framework 1 routes it: X-Original-URL, else
    X-Rewrite-URL (PHP reads X_Original_URL as the same field), else the
    request line's; an absolute URL's authority dropped."""
    for name in (b"x-original-url", b"x_original_url", b"x-rewrite-url", b"x_rewrite_url"):
        if name in hdrs:
            url = urllib.parse.urlsplit(hdrs[name].decode())
            return posixpath.normpath(urllib.parse.unquote(url.path or "/"))
    return path


def serve_h1(c, head, data):
    """Requests in turn on one connection (none has a body)."""
    while True:
        path, hdrs = fields(head)
        said(hdrs.get(b"x-api-key", b"-").decode(), routed_by(path, hdrs), "h1",
             served_as(head, path, hdrs))
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nh1 ok\n")
        got = read_head(c, data)
        if got is None:
            return
        head, data = got


def serve(c):
    c.settimeout(10)
    try:
        got = read_head(c, b"")
        if got is None:
            return
        head, rest = got
        path, hdrs = fields(head)
        if head.upper().startswith(b"CONNECT "):
            c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            serve_tunnel(c, rest)
            return
        if b"h2c" in hdrs.get(b"upgrade", b"").lower():
            c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                      b"Upgrade: h2c\r\n\r\n")
            serve_h2(c, path, hdrs, rest)
            return
        if path.startswith("/static/"):
            serve_cl0(c, head, rest)
            return
        if path.startswith(("/headget/", "/headlate/")):
            serve_headget(c, head, rest, path.startswith("/headlate/"))
            return
        serve_h1(c, head, rest)
    except (OSError, h2.exceptions.ProtocolError):
        pass
    finally:
        c.close()


def main():
    s = socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sys.argv[1], int(sys.argv[2])))
    s.listen(16)
    print("up", flush=True)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


if __name__ == "__main__":
    main()
