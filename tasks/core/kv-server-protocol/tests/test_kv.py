import json
import os
import random
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")

MILESTONES = ["basic_commands", "error_handling", "incr_concurrency", "keys_listing", "pipelining", "persistence"]
notes: list[str] = []
RNG = random.Random(9090)
PORT = 45000 + RNG.randint(0, 900)
DATADIR = rc.scratch("kv-")  # the server (as nobody) keeps its snapshot here
DATAFILE = os.path.join(DATADIR, "kv.data")


class Client:
    def __init__(self, timeout: float = 10):
        self.s = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.s.sendall(data)

    def line(self) -> str:
        while b"\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise ConnectionError("server closed the connection")
            self.buf += d
        ln, self.buf = self.buf.split(b"\n", 1)
        return ln.decode("utf-8", "replace")

    def cmd(self, text: str) -> str:
        self.send(text.encode() + b"\n")
        return self.line()

    def keys(self, prefix: str | None = None) -> list[str] | str:
        head = self.cmd("KEYS" + (f" {prefix}" if prefix is not None else ""))
        if not head.startswith("KEYS "):
            return head
        return [self.line() for _ in range(int(head.split()[1]))]

    def close(self) -> None:
        self.s.close()


def start() -> subprocess.Popen:
    p = rc.start(["/app/kvserver", str(PORT), DATAFILE])
    end = time.monotonic() + 10
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", PORT)) == 0:
                return p
        if p.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeError("kvserver did not start listening")


def stop(p: subprocess.Popen) -> None:
    rc.stop(p)
    end = time.monotonic() + 5
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", PORT)) != 0:
                return
        time.sleep(0.1)


def expect(label: str, got, want) -> bool:
    if got != want:
        notes.append(f"{label}: got {got!r}, want {want!r}")
        return False
    return True


def basic_commands() -> bool:
    c = Client()
    ok = expect("PING", c.cmd("PING"), "PONG")
    ok &= expect("ping lower-case", c.cmd("ping"), "PONG")
    ok &= expect("GET absent", c.cmd("GET nothing"), "NIL")
    ok &= expect("SET", c.cmd("SET user:1 Ada Lovelace"), "OK")
    ok &= expect("GET", c.cmd("GET user:1"), "VALUE Ada Lovelace")
    ok &= expect("SET spaces", c.cmd("SET k.2  two  spaces "), "OK")
    ok &= expect("GET spaces", c.cmd("get k.2"), "VALUE  two  spaces ")
    ok &= expect("SET empty", c.cmd("SET empty "), "OK")
    ok &= expect("GET empty", c.cmd("GET empty"), "VALUE ")
    ok &= expect("SET unicode", c.cmd("SeT uni Grüße, 世界"), "OK")
    ok &= expect("GET unicode", c.cmd("GET uni"), "VALUE Grüße, 世界")
    ok &= expect("SET CRLF", c.cmd("SET crlf value\r"), "OK")
    ok &= expect("GET CRLF", c.cmd("GET crlf\r"), "VALUE value")
    ok &= expect("overwrite", (c.cmd("SET user:1 Grace"), c.cmd("GET user:1")), ("OK", "VALUE Grace"))
    ok &= expect("DEL", (c.cmd("DEL user:1"), c.cmd("DEL user:1"), c.cmd("GET user:1")), ("INT 1", "INT 0", "NIL"))
    ok &= expect("INCR", (c.cmd("INCR n"), c.cmd("INCR n 41"), c.cmd("INCR n -50"), c.cmd("GET n")), ("INT 1", "INT 42", "INT -8", "VALUE -8"))
    ok &= expect("INCR on set value", (c.cmd("SET m 007"), c.cmd("INCR m")), ("OK", "INT 8"))
    other = Client()
    ok &= expect("visible to other clients", other.cmd("GET uni"), "VALUE Grüße, 世界")
    ok &= expect("QUIT", other.cmd("QUIT"), "BYE")
    try:
        other.s.settimeout(3)
        closed = other.s.recv(10) == b""
    except (ConnectionError, socket.timeout):
        closed = False
    ok &= expect("closed after QUIT", closed, True)
    c.close()
    return ok


def error_handling() -> bool:
    c = Client()
    ok = True
    for req, want in (("FLY away", "ERR unknown command"), ("", "ERR unknown command"), ("GET", "ERR syntax"),
                      ("GET a b", "ERR syntax"), ("SET k", "ERR syntax"), ("GET a/b", "ERR syntax"), ("GET " + "k" * 65, "ERR syntax"),
                      ("DEL", "ERR syntax"), ("INCR", "ERR syntax"), ("INCR a 1 2", "ERR syntax"), ("SET bad%key v", "ERR syntax")):
        ok &= expect(f"error for {req[:20]!r}", c.cmd(req), want)
    ok &= expect("64-char key ok", c.cmd("SET " + "k" * 64 + " v"), "OK")
    c.cmd("SET word hello")
    ok &= expect("INCR non-integer", c.cmd("INCR word"), "ERR not an integer")
    ok &= expect("INCR bad delta", c.cmd("INCR cnt x1"), "ERR not an integer")
    ok &= expect("INCR 1.5", (c.cmd("SET f 1.5"), c.cmd("INCR f")), ("OK", "ERR not an integer"))
    ok &= expect("value unchanged after errors", c.cmd("GET word"), "VALUE hello")
    ok &= expect("still usable", c.cmd("PING"), "PONG")
    c.close()
    return ok


def incr_concurrency() -> bool:
    def worker(i: int) -> bool:
        c = Client(timeout=30)
        good = True
        for j in range(60):
            r = c.cmd("INCR shared" if j % 2 else "INCR shared 1")
            good &= r.startswith("INT ")
            c.cmd(f"SET w{i} {j}")
        c.close()
        return good

    with ThreadPoolExecutor(50) as ex:
        res = list(ex.map(worker, range(50)))
    c = Client()
    ok = expect("all INCRs answered", all(res), True)
    ok &= expect("no lost INCR", c.cmd("GET shared"), "VALUE 3000")
    ok &= expect("per-client keys", [c.cmd(f"GET w{i}") for i in (0, 17, 49)], ["VALUE 59"] * 3)
    c.close()
    return ok


def keys_listing() -> bool:
    c = Client()
    names = ["app:b", "app:a", "app:B", "app:aa", "app", "apple", "zzz", "app:-", "Zeta"]
    for k in names:
        c.cmd(f"SET {k} 1")
    ok = expect("KEYS app:", c.keys("app:"), sorted(k for k in names if k.startswith("app:")))
    ok &= expect("KEYS app", c.keys("app"), sorted(k for k in names if k.startswith("app")))
    ok &= expect("KEYS none", c.keys("nomatch"), [])
    allkeys = c.keys()
    ok &= expect("KEYS all sorted", isinstance(allkeys, list) and allkeys == sorted(allkeys) and set(names) <= set(allkeys), True)
    c.cmd("DEL app:aa")
    ok &= expect("KEYS after DEL", c.keys("app:a"), ["app:a"])
    c.close()
    return ok


def pipelining() -> bool:
    c = Client(timeout=30)
    reqs, want = [], []
    for i in range(400):
        k = f"p{i % 37}"
        kind = i % 4
        if kind == 0:
            reqs.append(f"SET {k} v{i}")
            want.append("OK")
        elif kind == 1:
            reqs.append(f"INCR pc{i % 5}")
            want.append(None)
        elif kind == 2:
            reqs.append("PING")
            want.append("PONG")
        else:
            reqs.append("NOPE")
            want.append("ERR unknown command")
    c.send(("\n".join(reqs) + "\n").encode())
    got = [c.line() for _ in reqs]
    ok = expect("pipelined responses", [g if w is not None else (g.startswith("INT ") or g) for g, w in zip(got, want)],
                [w if w is not None else True for w in want])
    counts = {}
    for r, g in zip(reqs, got):
        if r.startswith("INCR"):
            counts[r] = counts.get(r, 0) + 1
            ok &= expect(f"order of {r}", g, f"INT {counts[r]}")
    # One request dribbled byte by byte, then two requests in one packet with a split in the middle.
    for b in b"SET slow dribbled value\n":
        c.send(bytes([b]))
        time.sleep(0.002)
    ok &= expect("dribbled request", c.line(), "OK")
    c.send(b"GET slow\nGE")
    time.sleep(0.2)
    c.send(b"T p0\n")
    last_p0 = max(i for i in range(400) if i % 4 == 0 and i % 37 == 0)
    ok &= expect("split requests", (c.line(), c.line()), ("VALUE dribbled value", f"VALUE v{last_p0}"))
    c.close()
    return ok


def persistence(proc: subprocess.Popen) -> tuple[bool, subprocess.Popen]:
    c = Client()
    c.cmd("SET saved:1 first value")
    c.cmd("SET saved:2 Grüße")
    c.cmd("INCR saved:n 5")
    ok = expect("SAVE", c.cmd("SAVE"), "OK")
    c.cmd("SET saved:1 changed after save")
    c.close()
    stop(proc)
    proc = start()
    c = Client()
    ok &= expect("after kill -9 restart", [c.cmd("GET saved:2"), c.cmd("GET saved:n")], ["VALUE Grüße", "VALUE 5"])
    ok &= expect("value at SAVE time or later", c.cmd("GET saved:1") in ("VALUE first value", "VALUE changed after save"), True)
    # A large data set saved, then the server is killed while saving again: the file must still load.
    c.send(("".join(f"SET big{i} {'x' * 200}{i}\n" for i in range(3000))).encode())
    for _ in range(3000):
        c.line()
    ok &= expect("SAVE big", c.cmd("SAVE"), "OK")
    c.send(b"SET big0 replaced\nSAVE\n")
    c.close()
    rc.stop(proc)  # possibly in the middle of the second SAVE
    stop(proc)
    proc = start()
    c = Client()
    ok &= expect("snapshot intact after kill during SAVE", c.cmd("GET big2999"), "VALUE " + "x" * 200 + "2999")
    ok &= expect("big0 old or new", c.cmd("GET big0") in ("VALUE " + "x" * 200 + "0", "VALUE replaced"), True)
    c.close()
    return ok, proc


def main() -> int:
    results = {m: 0 for m in MILESTONES}
    if not os.access("/app/kvserver", os.X_OK):
        notes.append("/app/kvserver missing or not executable")
    else:
        proc = None
        try:
            proc = start()
            for name, fn in (("basic_commands", basic_commands), ("error_handling", error_handling),
                             ("incr_concurrency", incr_concurrency), ("keys_listing", keys_listing), ("pipelining", pipelining)):
                try:
                    results[name] = int(fn())
                except (OSError, ConnectionError, ValueError, IndexError) as e:
                    notes.append(f"{name}: {e!r}")
                    if proc.poll() is not None:
                        proc = start()
            try:
                ok, proc = persistence(proc)
                results["persistence"] = int(ok)
            except (OSError, ConnectionError, RuntimeError, ValueError) as e:
                notes.append(f"persistence: {e!r}")
        except RuntimeError as e:
            notes.append(str(e))
        finally:
            if proc is not None:
                rc.stop(proc)
    reward = int(all(results.values()))
    print("\n".join(notes))
    print(json.dumps(results))
    rc.write_reward(reward, results)
    return 0 if reward else 1


sys.exit(main())
