#!/usr/bin/env python3
"""Line-protocol key-value server: one thread per client, one lock for the data set."""
import json
import os
import re
import socket
import sys
import tempfile
import threading

KEY = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
INT = re.compile(r"-?[0-9]+")


class Store:
    def __init__(self, path: str):
        self.path = path
        self.lock = threading.Lock()
        self.data: dict[str, str] = {}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                self.data = json.load(f)

    def save(self) -> None:
        with self.lock:
            snapshot = json.dumps(self.data, ensure_ascii=False)
        # Write a temp file in the same directory, fsync, then rename: readers see old or new, never half.
        d = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".kv-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(snapshot)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


def execute(store: Store, line: str) -> tuple[list[str], bool]:
    cmd, _, rest = line.partition(" ")
    cmd = cmd.upper()
    if cmd == "SET":
        key, sep, value = rest.partition(" ")
        if not sep or not KEY.fullmatch(key):
            return ["ERR syntax"], False
        with store.lock:
            store.data[key] = value
        return ["OK"], False
    args = rest.split(" ") if rest else []
    if cmd == "PING":
        return (["PONG"] if not args else ["ERR syntax"]), False
    if cmd == "QUIT":
        return ["BYE"], True
    if cmd == "SAVE":
        store.save()
        return ["OK"], False
    if cmd == "KEYS":
        if len(args) > 1:
            return ["ERR syntax"], False
        prefix = args[0] if args else ""
        with store.lock:
            keys = sorted((k for k in store.data if k.startswith(prefix)), key=lambda k: k.encode())
        return [f"KEYS {len(keys)}", *keys], False
    if cmd in ("GET", "DEL", "INCR"):
        nmax = 2 if cmd == "INCR" else 1
        if not 1 <= len(args) <= nmax or not KEY.fullmatch(args[0]):
            return ["ERR syntax"], False
        key = args[0]
        with store.lock:
            if cmd == "GET":
                v = store.data.get(key)
                return ([f"VALUE {v}"] if v is not None else ["NIL"]), False
            if cmd == "DEL":
                return [f"INT {int(store.data.pop(key, None) is not None)}"], False
            delta = args[1] if len(args) == 2 else "1"
            cur = store.data.get(key, "0")
            if not INT.fullmatch(delta) or not INT.fullmatch(cur):
                return ["ERR not an integer"], False
            store.data[key] = str(int(cur) + int(delta))
            return [f"INT {store.data[key]}"], False
    return ["ERR unknown command"], False


def serve(conn: socket.socket, store: Store) -> None:
    buf = b""
    with conn:
        while True:
            try:
                chunk = conn.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            out, quit_ = [], False
            while b"\n" in buf and not quit_:
                raw, buf = buf.split(b"\n", 1)
                line = raw.decode("utf-8", "replace")
                if line.endswith("\r"):
                    line = line[:-1]
                lines, quit_ = execute(store, line)
                out.extend(lines)
            if out:
                conn.sendall(("\n".join(out) + "\n").encode("utf-8"))
            if quit_:
                return


def main() -> None:
    port, path = int(sys.argv[1]), sys.argv[2]
    store = Store(path)
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(256)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn, store), daemon=True).start()


if __name__ == "__main__":
    main()
