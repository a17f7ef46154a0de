#!/bin/bash
set -e
cat > /app/scan <<'PY'
#!/usr/bin/env python3
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor


def ports(spec):
    out = set()
    for part in spec.split(","):
        a, _, b = part.strip().partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return sorted(out)


def probe(host, port):
    try:
        s = socket.create_connection((host, port), timeout=1)
    except OSError:
        return None
    data = b""
    deadline = time.monotonic() + 1.0
    with s:
        # Read until a full line, EOF or the one-second budget runs out.
        while b"\n" not in data:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            s.settimeout(left)
            try:
                chunk = s.recv(4096)
            except (socket.timeout, OSError):
                break
            if not chunk:
                break
            data += chunk
    line = data.split(b"\n")[0].rstrip(b"\r")
    return line.decode(errors="replace") if line else "-"


host, spec = sys.argv[1], sys.argv[2]
plist = ports(spec)
with ThreadPoolExecutor(32) as ex:
    results = list(ex.map(lambda p: probe(host, p), plist))
for p, banner in zip(plist, results):
    if banner is not None:
        print(f"{p}\t{banner}")
PY
chmod +x /app/scan
