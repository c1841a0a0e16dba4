"""The DPDK telemetry socket (v2 protocol), as dpdk-telemetry.py speaks it:
one JSON greeting, then one command and one JSON reply at a time."""

import glob
import json
import os
import socket

RUNDIR = "/var/run/dpdk"


def socket_path(prefix=None):
    """The socket of the sluice instance with --file-prefix PREFIX, or of
    the only one running when no prefix is given."""
    if prefix:
        return os.path.join(RUNDIR, prefix, "dpdk_telemetry.v2")
    found = sorted(glob.glob(os.path.join(RUNDIR, "*", "dpdk_telemetry.v2")))
    live = [p for p in found if _alive(p)]
    if len(live) != 1:
        raise SystemExit("sluice: %s running; name one with -f PREFIX (%s)" % (
            "none" if not live else "several",
            ", ".join(os.path.basename(os.path.dirname(p)) for p in live) or "-"))
    return live[0]


def _alive(path):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(1)
        s.connect(path)
        s.close()
        return True
    except OSError:
        return False


class NoAppliance(OSError):
    """No sluice answers on the socket a prefix names: said in one line."""


class Telemetry:
    def __init__(self, prefix=None, timeout=5.0):
        path = socket_path(prefix)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError) as e:
            self.sock.close()
            raise NoAppliance("no sluice answers at %s (is it running with "
                              "--file-prefix %s?)" % (path, prefix)) from e
        info = json.loads(self.sock.recv(65536).decode())
        self.max_len = info.get("max_output_len", 16384)

    def __call__(self, cmd):
        self.sock.send(cmd.encode())
        reply = json.loads(self.sock.recv(self.max_len).decode())
        return reply[cmd.split(",")[0]]

    def close(self):
        self.sock.close()
