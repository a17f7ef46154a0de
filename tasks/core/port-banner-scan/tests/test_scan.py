import os
import random
import socket
import sys
import threading
import time

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")


def listener(port: int, behaviour: str, banner: bytes) -> None:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)

    def handle(c: socket.socket) -> None:
        try:
            if behaviour == "banner":
                c.sendall(banner)
            elif behaviour == "split":
                c.sendall(banner[:5])
                time.sleep(0.3)
                c.sendall(banner[5:])
            elif behaviour == "partial":
                c.sendall(banner.rstrip(b"\r\n"))
            elif behaviour == "close":
                c.close()
                return
            elif behaviour == "late":
                time.sleep(2.5)
                c.sendall(banner)
            time.sleep(4)
        except OSError:
            pass
        finally:
            c.close()

    def loop() -> None:
        while True:
            c, _ = s.accept()
            threading.Thread(target=handle, args=(c,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()


def main() -> int:
    if not os.access("/app/scan", os.X_OK):
        print("FAIL: /app/scan missing or not executable")
        return 1
    rng = random.Random(4242)
    base = 30000 + rng.randint(0, 2000)
    ports = rng.sample(range(base, base + 60), 8)
    kinds = ["banner", "banner", "split", "partial", "silent", "close", "late", "banner"]
    banners = [b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", b"220 smtp.example ESMTP Postfix\r\n250 second line\r\n",
               b"+OK POP3 ready <1234.5678@host>\n", b"* OK IMAP4rev1 server ready", b"", b"", b"late banner\r\n",
               b"RFB 003.008\n"]
    want = {}
    for p, k, b in zip(ports, kinds, banners):
        listener(p, k, b)
        if k in ("banner", "split", "partial"):
            want[p] = b.split(b"\n")[0].rstrip(b"\r").decode()
        else:
            want[p] = "-"
    spec = f"{base}-{base + 30},{base + 25}-{base + 59},{ports[0]},{base + 70}"
    expect = "".join(f"{p}\t{want[p]}\n" for p in sorted(want))
    r = rc.run(["/app/scan", "127.0.0.1", spec], timeout=90)
    if r.returncode != 0 or r.stdout != expect:
        print(f"FAIL: rc={r.returncode}\nwant:\n{expect}got:\n{r.stdout}\nstderr: {r.stderr[-300:]}")
        return 1
    # A second scan limited to a single port and a range with no services.
    r = rc.run(["/app/scan", "127.0.0.1", f"{ports[1]},{base + 61}-{base + 65}"], timeout=30)
    if r.returncode != 0 or r.stdout != f"{ports[1]}\t{want[ports[1]]}\n":
        print(f"FAIL: single-port scan gave {r.stdout!r}")
        return 1
    print("PASS: scan output correct")
    return 0


sys.exit(main())
