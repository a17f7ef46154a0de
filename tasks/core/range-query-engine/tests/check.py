"""Small cases against a brute-force model, large cases against a compiled reference with a time
bound that only sub-linear-per-operation solutions meet."""
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")
notes = []
rng = random.Random(424242)
# The compiled reference lives in a root-only directory: a deliverable that found it could
# simply forward its input to it.
REF = os.path.join(tempfile.mkdtemp(), "rq_ref")
subprocess.run(["gcc", "-O2", "-o", REF, "/tests/ref.c"], check=True)


def expect(cond, msg):
    if not cond:
        notes.append(msg)
        raise AssertionError(msg)


def gen(n, q, ops, vmax=10**9):
    a = [rng.randint(-vmax, vmax) for _ in range(n)]
    lines = [f"{n} {q}", " ".join(map(str, a))]
    for _ in range(q):
        op = rng.choice(ops)
        l = rng.randint(1, n)
        r = rng.randint(l, min(n, l + rng.choice([0, 3, n])))
        if op == "U":
            lines.append(f"U {l} {rng.randint(-vmax, vmax)}")
        elif op == "A":
            lines.append(f"A {l} {r} {rng.randint(-10**4, 10**4)}")
        else:
            lines.append(f"{op} {l} {r}")
    return "\n".join(lines) + "\n"


def brute(text):
    it = text.split("\n")
    n, q = map(int, it[0].split())
    a = [0] + list(map(int, it[1].split()))
    out = []
    for line in it[2:2 + q]:
        p = line.split()
        if p[0] == "U":
            a[int(p[1])] = int(p[2])
        elif p[0] == "A":
            for i in range(int(p[1]), int(p[2]) + 1):
                a[i] += int(p[3])
        elif p[0] == "S":
            out.append(sum(a[int(p[1]):int(p[2]) + 1]))
        else:
            out.append(max(a[int(p[1]):int(p[2]) + 1]))
    return "".join(f"{x}\n" for x in out)


def run(text, timeout):
    expect(os.access("/app/rq", os.X_OK), "/app/rq is missing or not executable")
    try:
        r = rc.run(["/app/rq"], input=text, timeout=timeout)
    except subprocess.TimeoutExpired:
        expect(False, f"/app/rq exceeded {timeout} s")
    expect(r.returncode == 0, f"/app/rq exited {r.returncode}: {r.stderr[-200:]}")
    return r.stdout


def m_point_queries():
    for case in range(25):
        n = rng.choice([1, 2, 5, 17, 100])
        text = gen(n, rng.randint(1, 80), ["U", "S", "M", "S"])
        expect(run(text, 10) == brute(text), f"small point/query case {case} wrong")


def m_range_add():
    for case in range(25):
        n = rng.choice([1, 3, 8, 33, 150])
        text = gen(n, rng.randint(1, 120), ["U", "A", "A", "S", "M"])
        expect(run(text, 10) == brute(text), f"small range-add case {case} wrong")


def reference(text):
    return subprocess.run([REF], input=text, capture_output=True, text=True, check=True).stdout


def m_large_sum_updates():
    text = gen(200000, 200000, ["U", "S", "S"])
    expect(run(text, 5) == reference(text), "large update/sum case wrong")


def m_large_mixed():
    text = gen(200000, 200000, ["U", "A", "S", "M"])
    expect(run(text, 5) == reference(text), "large mixed case wrong")
    text = gen(200000, 200000, ["A", "M"], vmax=10**9)
    expect(run(text, 5) == reference(text), "large add/max case wrong")


MILESTONES = [m_point_queries, m_range_add, m_large_sum_updates, m_large_mixed]
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
