"""A TCP proxy on 127.0.0.1 that holds every reply from its target a
random 0..max_ms, in order (late, never reordered): Redis answering late
now and then, for tests/e2e/test_accuracy.py and scripts/bench-redis.sh.

usage: delayproxy.py TARGET_PORT MAX_MS   (prints its port, runs until
killed)
"""

import random
import socket
import sys
import threading
import time


class DelayProxy:
    """127.0.0.1:port -> Redis; replies held 0..max_ms each, in order."""

    def __init__(self, target, max_ms):
        self.target, self.max_s = target, max_ms / 1000.0
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(64)
        self.port = self.srv.getsockname()[1]
        self.stop = False
        self.rnd = random.Random(7)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            u = socket.create_connection(("127.0.0.1", self.target))
            for s in (c, u):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._pipe, args=(c, u, 0), daemon=True).start()
            threading.Thread(target=self._pipe, args=(u, c, self.max_s), daemon=True).start()

    def _pipe(self, src, dst, delay):
        # every chunk due at its arrival plus a random delay, never before
        # the one ahead of it: late, in order, never reordered
        due = 0.0
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                if delay:
                    due = max(due, time.monotonic() + self.rnd.uniform(0, delay))
                    wait = due - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
                dst.sendall(b)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.stop = True
        self.srv.close()


if __name__ == "__main__":
    p = DelayProxy(int(sys.argv[1]), float(sys.argv[2]))
    print(p.port, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        p.close()
