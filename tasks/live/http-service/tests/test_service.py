"""Queries the agent's HTTP service over loopback (it must already be running)."""

import http.client
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()  # the service is only queried; lockdown closes /tests and the reward directory
FAILS = []


def get(path):
    conn = http.client.HTTPConnection("127.0.0.1", 8080, timeout=5)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read().decode(errors="replace").strip()
    finally:
        conn.close()


def check(path, status, body=None):
    try:
        got_status, got_body = get(path)
    except OSError as e:
        FAILS.append(f"GET {path}: no answer ({e})")
        return
    if isinstance(status, tuple):
        ok = got_status in status
    else:
        ok = got_status == status
    if not ok or (body is not None and got_body != body):
        FAILS.append(f"GET {path}: expected {status} {body!r}, got {got_status} {got_body[:80]!r}")


check("/health", 200, "ok")
check("/add?a=2&b=40", 200, "42")
check("/add?a=-7&b=3", 200, "-4")
big = 2**70
check(f"/add?a={big}&b={big}", 200, str(2 * big))
check("/add?a=1", (400, 404))
check("/add?a=x&b=2", (400, 404))
check("/nope", (400, 404))

for f in FAILS:
    print("FAIL:", f)
if FAILS:
    sys.exit(1)
print("PASS: service answers")
