"""Milestone checks for /app/kv.py; writes /logs/verifier/reward.json."""
import os
import random
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")
# The stores live in a directory of the deliverable's user; the checker touches their files
# only as that user (rc.as_user), so a planted symlink cannot redirect its reads or writes.
ROOT = rc.scratch("kvt-")
rng = random.Random(8086)
notes = []


def kv(db, *args, stdin=None):
    return rc.run(["python3", "/app/kv.py", db, *args], input=stdin, timeout=30)


def expect(cond, msg):
    if not cond:
        notes.append(msg)
        raise AssertionError(msg)


def rd(path):
    with rc.as_user(), open(path, "rb") as f:
        return f.read()


def wr(path, data):
    with rc.as_user(), open(path, "wb") as f:
        f.write(data)


def size(path):
    with rc.as_user():
        return os.path.getsize(path)


def fresh(name):
    return os.path.join(ROOT, name)


def scan_dict(db, prefix=None):
    r = kv(db, "scan", *([prefix] if prefix is not None else []))
    expect(r.returncode == 0, f"scan exit {r.returncode}: {r.stderr[-200:]}")
    out = {}
    for line in r.stdout.split("\n")[:-1]:
        k, _, v = line.partition("\t")
        out[k] = v
    return out, r.stdout


VALUES = ["plain", "with spaces  inside", "tab\tin value", "ünïcødé ✓", "", "x" * 3000, "a=b;c"]


def m_basic_ops():
    db = fresh("basic")
    expect(kv(db, "set", "alpha", "one").returncode == 0, "set failed")
    r = kv(db, "get", "alpha")
    expect(r.returncode == 0 and r.stdout == "one\n", f"get alpha -> {r.stdout!r}")
    for i, v in enumerate(VALUES[:4]):
        kv(db, "set", f"k{i}", v)
    kv(db, "batch", stdin="".join(f"set k{i} {v}\n" for i, v in enumerate(VALUES) if i >= 4))
    for i, v in enumerate(VALUES):
        r = kv(db, "get", f"k{i}")
        expect(r.stdout == v + "\n", f"value {v[:20]!r} read back as {r.stdout[:40]!r}")
    kv(db, "set", "alpha", "two")
    expect(kv(db, "get", "alpha").stdout == "two\n", "overwrite not visible")
    r = kv(db, "get", "nope")
    expect(r.returncode == 1 and r.stdout == "", "get of a missing key must exit 1 with no output")
    expect(kv(db, "del", "alpha").returncode == 0, "del failed")
    expect(kv(db, "get", "alpha").returncode == 1, "deleted key still readable")
    expect(kv(db, "del", "alpha").returncode == 1, "del of a missing key must exit 1")
    for bad in (["frob", "x"], ["set", "a b", "v"], ["set", "k"], ["get"], ["set", "k", "line\nbreak"],
                ["scan", "a", "b"]):
        expect(kv(db, *bad).returncode == 2, f"usage error {bad} must exit 2")
    expect(kv(db, "get", "k").returncode == 1, "a rejected set changed the store")
    with rc.as_user():
        expect(os.path.isfile(os.path.join(db, "data.log")), "DBDIR/data.log missing")


def m_persistence():
    db = fresh("persist")
    model = {}
    for step in range(60):
        k = f"key{rng.randrange(30)}"
        if rng.random() < 0.25 and model:
            k = rng.choice(sorted(model))
            kv(db, "del", k)
            model.pop(k)
        else:
            v = rng.choice(VALUES) + str(step)
            kv(db, "set", k, v)
            model[k] = v
    got, _ = scan_dict(db)
    expect(got == model, "state after 60 random commands differs from the expected state")
    before = size(os.path.join(db, "data.log"))
    kv(db, "set", "tail", "x")
    expect(size(os.path.join(db, "data.log")) > before, "set did not append to data.log")


def m_prefix_scan():
    db = fresh("scan")
    keys = ["b", "a", "ab", "abc", "B", "a-z", "ä", "aa", "b1", "abd"]
    stdin = "".join(f"set {k} v_{k}\n" for k in keys)
    expect(kv(db, "batch", stdin=stdin).returncode == 0, "batch failed")
    _, raw = scan_dict(db)
    expect(raw == "".join(f"{k}\tv_{k}\n" for k in sorted(keys)), f"scan output wrong: {raw!r}")
    _, raw = scan_dict(db, "ab")
    expect(raw == "ab\tv_ab\nabc\tv_abc\nabd\tv_abd\n", f"scan ab wrong: {raw!r}")
    _, raw = scan_dict(db, "zz")
    expect(raw == "", "scan with no match must print nothing")


def m_atomic_batch():
    db = fresh("batch")
    kv(db, "set", "keep", "1")
    r = kv(db, "batch", stdin="set a 1\n\nset b two words\ndel keep\ndel ghost\nset a 3\n")
    expect(r.returncode == 0, f"valid batch failed: {r.stderr[-200:]}")
    got, _ = scan_dict(db)
    expect(got == {"a": "3", "b": "two words"}, f"batch result {got}")
    before = rd(os.path.join(db, "data.log"))
    r = kv(db, "batch", stdin="set c 1\nset d 2\nbogus line\n")
    expect(r.returncode == 2, "malformed batch must exit 2")
    got, _ = scan_dict(db)
    expect(got == {"a": "3", "b": "two words"}, "malformed batch partially applied")
    expect(rd(os.path.join(db, "data.log")) == before, "malformed batch wrote to the log")
    big = "".join(f"set bulk{i:04d} value {i}\n" for i in range(1500))
    expect(kv(db, "batch", stdin=big).returncode == 0, "1500-line batch failed")
    got, _ = scan_dict(db, "bulk")
    expect(len(got) == 1500 and got["bulk0777"] == "value 777", "bulk batch not applied")


def torn(db, cmd, stdin=None, leave_torn=False):
    """Runs one appending command, then cuts the log at several points inside what it appended;
    returns (size_before, size_after) and asserts the command left no trace after each cut."""
    log = os.path.join(db, "data.log")
    saved = rd(log)
    state_before, _ = scan_dict(db)
    r = kv(db, *cmd, stdin=stdin)
    expect(r.returncode == 0, f"{cmd} failed")
    full = rd(log)
    expect(full[:len(saved)] == saved, f"{cmd} rewrote existing bytes of data.log")
    added = len(full) - len(saved)
    expect(added > 1, f"{cmd} appended nothing")
    for cut in sorted({1, added // 3, added // 2, added - 1}):
        wr(log, full[:len(saved) + cut])
        got, _ = scan_dict(db)
        expect(got == state_before, f"after cutting the last {cmd[0]} to {cut}/{added} bytes the state is wrong")
    if not leave_torn:
        wr(log, saved)
    else:
        wr(log, full[:len(saved) + added // 2])


def m_crash_recovery():
    db = fresh("crash")
    kv(db, "batch", stdin="".join(f"set base{i} v{i}\n" for i in range(20)))
    kv(db, "del", "base3")
    torn(db, ["set", "base5", "NEW VALUE " * 50])
    expect(kv(db, "get", "base5").stdout == "v5\n", "torn set changed the old value")
    torn(db, ["del", "base7"])
    torn(db, ["batch"], stdin="".join(f"set t{i} {i}\n" for i in range(40)) + "del base1\n", leave_torn=True)
    expect(kv(db, "get", "base1").stdout == "v1\n", "torn batch partially applied")
    # The store must keep working after a torn tail, and new data must persist.
    expect(kv(db, "set", "after", "crash ok").returncode == 0, "set after a torn write failed")
    expect(kv(db, "get", "after").stdout == "crash ok\n", "set after a torn write not readable")
    got, _ = scan_dict(db)
    exp = {f"base{i}": f"v{i}" for i in range(20) if i != 3}
    exp["after"] = "crash ok"
    expect(got == exp, f"state after recovery differs: {sorted(set(got) ^ set(exp))}")
    expect(kv(db, "batch", stdin="set z 1\nset y 2\n").returncode == 0, "batch after recovery failed")
    expect(kv(db, "get", "y").stdout == "2\n", "batch after recovery not readable")


def m_compaction():
    db = fresh("compact")
    for round_ in range(6):
        kv(db, "batch", stdin="".join(f"set hot{i} {'v' * 40}{round_}\n" for i in range(300)))
    kv(db, "batch", stdin="".join(f"del hot{i}\n" for i in range(0, 300, 2)))
    kv(db, "set", "ünï", "cødé")
    model, _ = scan_dict(db)
    before = size(os.path.join(db, "data.log"))
    r = kv(db, "compact")
    expect(r.returncode == 0, f"compact failed: {r.stderr[-200:]}")
    live = sum(len(k.encode()) + len(v.encode()) for k, v in model.items())
    now = size(os.path.join(db, "data.log"))
    limit = 2 * live + 50 * len(model) + 4096
    expect(now <= limit, f"data.log is {now} bytes after compact (was {before}), limit {limit}")
    with rc.as_user():
        left = sorted(os.listdir(db))
    expect(left == ["data.log"], f"extra files after compact: {left}")
    got, _ = scan_dict(db)
    expect(got == model, "data changed by compaction")
    kv(db, "set", "post", "compact")
    expect(kv(db, "get", "post").stdout == "compact\n", "set after compact failed")
    empty = fresh("compact-empty")
    kv(empty, "set", "a", "1")
    kv(empty, "del", "a")
    expect(kv(empty, "compact").returncode == 0, "compact of an empty store failed")
    got, _ = scan_dict(empty)
    expect(got == {}, "empty store not empty after compact")


MILESTONES = [m_basic_ops, m_persistence, m_prefix_scan, m_atomic_batch, m_crash_recovery, m_compaction]
result = {}
for m in MILESTONES:
    name = m.__name__[2:]
    try:
        m()
        result[name] = 1
    except Exception as e:  # noqa: BLE001
        if not isinstance(e, AssertionError):
            notes.append(f"{name}: {type(e).__name__}: {e}")
        result[name] = 0
    print(f"{name}: {'PASS' if result[name] else 'FAIL'}")
for n in notes:
    print("  note:", n[:300])
reward = int(all(result.values()))
rc.write_reward(reward, result)
sys.exit(0 if reward else 1)
