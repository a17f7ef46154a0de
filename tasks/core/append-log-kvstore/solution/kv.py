"""Persistent key-value store on an append-only log of JSON lines.

Each record is one line: {"s": [[k, v], ...], "d": [k, ...]} applied as a unit, so a batch is
atomic. A record counts only when its terminating newline made it to disk; a torn tail is cut
off before the next append so new records never join a partial one.
"""
import json
import os
import sys

USAGE = 2


class Usage(Exception):
    pass


def log_path(db):
    return os.path.join(db, "data.log")


def load(db):
    """Returns (state, valid_length) from the log, ignoring an incomplete or corrupt tail."""
    state, valid = {}, 0
    try:
        data = open(log_path(db), "rb").read()
    except FileNotFoundError:
        return state, 0
    pos = 0
    while True:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        try:
            rec = json.loads(data[pos:nl].decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            break
        apply_record(state, rec)
        pos = valid = nl + 1
    return state, valid


def apply_record(state, rec):
    for op in rec["ops"]:
        if op[0] == "s":
            state[op[1]] = op[2]
        else:
            state.pop(op[1], None)


def append(db, valid, ops):
    path = log_path(db)
    if os.path.exists(path) and os.path.getsize(path) > valid:
        # A torn record from a crashed writer: drop it so the new record starts on a clean line.
        with open(path, "r+b") as f:
            f.truncate(valid)
            f.flush()
            os.fsync(f.fileno())
    line = (json.dumps({"ops": ops}, ensure_ascii=False) + "\n").encode("utf-8")
    with open(path, "ab") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


def check_key(k):
    if not k or any(c.isspace() for c in k):
        raise Usage(f"bad key {k!r}")


def check_value(v):
    if "\n" in v or "\r" in v:
        raise Usage("value contains a newline")


def parse_batch(text):
    ops = []
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        cmd, _, rest = line.partition(" ")
        if cmd == "set":
            key, sep, value = rest.partition(" ")
            if not sep:
                raise Usage(f"bad batch line {line!r}")
            check_key(key)
            check_value(value)
            ops.append(["s", key, value])
        elif cmd == "del":
            check_key(rest)
            ops.append(["d", rest])
        else:
            raise Usage(f"bad batch line {line!r}")
    return ops


def compact(db, state):
    tmp = log_path(db) + ".tmp"
    with open(tmp, "wb") as f:
        if state:
            ops = [["s", k, v] for k, v in sorted(state.items())]
            f.write((json.dumps({"ops": ops}, ensure_ascii=False, separators=(",", ":")) + "\n").encode())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, log_path(db))
    fd = os.open(db, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def main(argv):
    if len(argv) < 2:
        raise Usage("usage: kv.py DBDIR COMMAND ...")
    db, cmd, args = argv[0], argv[1], argv[2:]
    arity = {"set": (2, 2), "get": (1, 1), "del": (1, 1), "scan": (0, 1), "batch": (0, 0), "compact": (0, 0)}
    if cmd not in arity or not arity[cmd][0] <= len(args) <= arity[cmd][1]:
        raise Usage(f"bad command {cmd!r} or arguments")
    if cmd in ("set", "get", "del"):
        check_key(args[0])
    if cmd == "set":
        check_value(args[1])
    batch_ops = parse_batch(sys.stdin.read()) if cmd == "batch" else None
    os.makedirs(db, exist_ok=True)
    state, valid = load(db)
    if cmd == "set":
        append(db, valid, [["s", args[0], args[1]]])
    elif cmd == "get":
        if args[0] not in state:
            return 1
        print(state[args[0]])
    elif cmd == "del":
        if args[0] not in state:
            return 1
        append(db, valid, [["d", args[0]]])
    elif cmd == "scan":
        prefix = args[0] if args else ""
        out = [f"{k}\t{v}\n" for k, v in sorted(state.items()) if k.startswith(prefix)]
        sys.stdout.write("".join(out))
    elif cmd == "batch":
        if batch_ops:
            append(db, valid, batch_ops)
    elif cmd == "compact":
        compact(db, state)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Usage as e:
        print(e, file=sys.stderr)
        sys.exit(USAGE)
