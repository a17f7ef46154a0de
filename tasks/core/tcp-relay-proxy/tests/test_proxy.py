import hashlib
import os
import random
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")

errors: list[str] = []


def backend(port: int) -> None:
    """First line chooses the mode: 'sha' hashes everything up to EOF; 'echo' echoes as data arrives."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(64)

    def handle(c: socket.socket) -> None:
        with c:
            buf = b""
            while b"\n" not in buf:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            mode, rest = buf.split(b"\n", 1)
            if mode == b"sha":
                h = hashlib.sha256(rest)
                while True:
                    d = c.recv(65536)
                    if not d:
                        break
                    h.update(d)
                c.sendall(h.hexdigest().encode() + b"\n")
            else:
                if rest:
                    c.sendall(rest)
                while True:
                    d = c.recv(65536)
                    if not d:
                        break
                    c.sendall(d)

    def loop() -> None:
        while True:
            c, _ = s.accept()
            threading.Thread(target=handle, args=(c,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()


def wait_port(port: int, secs: float = 8) -> bool:
    end = time.monotonic() + secs
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.1)
    return False


def recv_all(s: socket.socket) -> bytes:
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            return out
        out += d


def sha_client(port: int, payload: bytes) -> tuple[int, int, bool]:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        msg = b"sha\n" + payload
        s.sendall(msg)
        s.shutdown(socket.SHUT_WR)
        reply = recv_all(s)
    return len(msg), len(reply), reply == hashlib.sha256(payload).hexdigest().encode() + b"\n"


def echo_client(port: int, rounds: int) -> tuple[int, int, bool]:
    up = down = 0
    ok = True
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"echo\n")
        up += 5
        for i in range(rounds):
            line = f"ping {i} {'x' * i}\n".encode()
            s.sendall(line)
            up += len(line)
            got = b""
            while len(got) < len(line):  # only possible if the proxy forwards without waiting for EOF
                d = s.recv(65536)
                if not d:
                    break
                got += d
            down += len(got)
            ok &= got == line
        s.shutdown(socket.SHUT_WR)
        rest = recv_all(s)
        ok &= rest == b""
    return up, down, ok


def read_log(path: str, n: int, secs: float = 8) -> list[list[str]]:
    end = time.monotonic() + secs
    lines: list[list[str]] = []
    while time.monotonic() < end:
        try:
            lines = [ln.split() for ln in rc.read_text(path).splitlines() if ln.strip()]
        except OSError:
            lines = []
        if len(lines) >= n:
            break
        time.sleep(0.1)
    return lines


def main() -> int:
    if not os.access("/app/proxy", os.X_OK):
        print("FAIL: /app/proxy missing or not executable")
        return 1
    rng = random.Random(777)
    bport, pport, dead, pport2 = 41000 + rng.randint(0, 500), 42000 + rng.randint(0, 500), 43000 + rng.randint(0, 500), 44000 + rng.randint(0, 500)
    backend(bport)
    d = rc.scratch("proxy-")  # the proxies run as nobody and log here
    log1, log2 = os.path.join(d, "p1.log"), os.path.join(d, "p2.log")
    procs = [rc.start(["/app/proxy", str(pport), str(bport), log1]), rc.start(["/app/proxy", str(pport2), str(dead), log2])]
    try:
        if not wait_port(pport) or not wait_port(pport2):
            print("FAIL: proxy did not start listening")
            return 1
        # wait_port's probe connections count as accepted connections 1 (p1) and 1 (p2).
        seq = []
        for size in (0, 1, 70000):
            payload = bytes(rng.randrange(256) for _ in range(size))
            seq.append(sha_client(pport, payload))
        seq.append(echo_client(pport, 12))
        lines = read_log(log1, 5)
        want = [["1", "0", "0"]] + [[str(i + 2), str(u), str(dn)] for i, (u, dn, _) in enumerate(seq)]
        if sorted(lines, key=lambda x: int(x[0])) != want:
            errors.append(f"sequential phase: log {lines} != {want}")
        if not all(ok for *_, ok in seq):
            errors.append("sequential phase: wrong data through the proxy")
        # Concurrent phase: an idle connection stays open throughout, then 40 clients at once.
        idle = socket.create_connection(("127.0.0.1", pport), timeout=10)
        idle.sendall(b"echo\n")
        jobs = [("sha", bytes(rng.randrange(256) for _ in range(rng.choice([10, 5000, 300000])))) for _ in range(30)]
        jobs += [("echo", rng.randint(1, 20)) for _ in range(10)]
        t0 = time.monotonic()
        with ThreadPoolExecutor(40) as ex:
            res = list(ex.map(lambda j: sha_client(pport, j[1]) if j[0] == "sha" else echo_client(pport, j[1]), jobs))
        if time.monotonic() - t0 > 30:
            errors.append("concurrent phase too slow")
        if not all(ok for *_, ok in res):
            errors.append(f"concurrent phase: {sum(not r[2] for r in res)} clients got wrong data")
        idle.sendall(b"still here\n")
        if idle.recv(100) != b"still here\n":
            errors.append("idle connection broken")
        idle.shutdown(socket.SHUT_WR)
        recv_all(idle)
        idle.close()
        lines = read_log(log1, 5 + 41)
        nums = sorted(int(x[0]) for x in lines)
        if nums != list(range(1, 47)):
            errors.append(f"connection numbers {nums[:5]}... not 1..46 ({len(nums)} lines)")
        got_pairs = sorted((int(x[1]), int(x[2])) for x in lines[5:] if len(x) == 3 and x[1].isdigit())
        want_pairs = sorted([(u, dn) for u, dn, _ in res] + [(5 + 11, 11)])
        if got_pairs != want_pairs:
            errors.append("concurrent phase: byte counts in the log do not match")
        # Refused target.
        with socket.create_connection(("127.0.0.1", pport2), timeout=5) as s:
            s.settimeout(5)
            try:
                eof = s.recv(10) == b""
            except ConnectionResetError:
                eof = True
            except socket.timeout:
                eof = False
        if not eof:
            errors.append("client not closed when the target refuses")
        lines2 = read_log(log2, 2)
        if sorted(lines2) != [["1", "refused"], ["2", "refused"]]:
            errors.append(f"refused log {lines2}")
        if any(p.poll() is not None for p in procs):
            errors.append("a proxy process died")
    finally:
        for p in procs:
            rc.stop(p)
    if errors:
        print("FAIL:\n" + "\n".join(errors))
        return 1
    print("PASS: proxy relays, half-closes and logs correctly")
    return 0


sys.exit(main())
