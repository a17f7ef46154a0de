"""Compares the agent's dedupe.py with the original on small inputs, then requires it to finish a
300,000-row input (where the quadratic original cannot) with the same output as a reference."""
import csv
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, "/tests")
import dedupe_original as ref  # noqa: E402
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")
# Inputs and the deliverable's outputs in its own directory; the expected outputs in a root-only
# one (mkdtemp: 0700), compared with what the deliverable wrote as read by its own user.
WORK = rc.scratch()
PRIVATE = tempfile.mkdtemp()

fails = []
rng = random.Random(4242)
FIRST = ["ana", "ben", "cy", "dee", "eli", "fay", "gus", "hal", "ivy", "jo"]
DOMAINS = ["example.com", "example.org", "Mail.example.net", "x.io"]


def make_csv(path, n, pool):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "name", "email", "city"])
        for i in range(n):
            local = f"{rng.choice(FIRST)}{rng.randrange(pool)}"
            if rng.random() < 0.2:
                local = local.upper()
            if rng.random() < 0.2:
                local += "+" + rng.choice(["news", "shop", "x"])
            email = f"{local}@{rng.choice(DOMAINS)}"
            if rng.random() < 0.1:
                email = f"  {email} "
            name = f"{rng.choice(FIRST).title()}, \"{i % 7}\""
            w.writerow([i, name, email, rng.choice(["Porto", "Rome", "Lagos, NG"])])


def run(script, src, dst, timeout):
    if script.startswith("/tests/"):  # the reference: trusted, run by the checker itself
        return subprocess.run(["python3", "-I", script, src, dst], capture_output=True, text=True, timeout=timeout)
    return rc.run(["python3", script, src, dst], timeout=timeout)


def same(expected, got):
    try:
        return open(expected, "rb").read() == rc.read_bytes(got)
    except OSError:
        return False


for k, (n, pool) in enumerate([(50, 5), (400, 20), (2000, 300), (3000, 5000)]):
    src = f"{WORK}/small{k}.csv"
    make_csv(src, n, pool)
    rc.hand_over(src)
    a = run("/tests/dedupe_original.py", src, f"{PRIVATE}/exp{k}.csv", 120)
    try:
        b = run("/app/dedupe.py", src, f"{WORK}/got{k}.csv", 60)
    except subprocess.TimeoutExpired:
        fails.append(f"small case {k}: timed out")
        continue
    if b.returncode != 0 or a.stdout != b.stdout or not same(f"{PRIVATE}/exp{k}.csv", f"{WORK}/got{k}.csv"):
        fails.append(f"small case {k} ({n} rows): output differs from the original ({b.stdout!r} vs {a.stdout!r}) {b.stderr[-300:]}")

# Large case: expected output computed here with a linear-time copy of the original semantics.
make_csv(f"{WORK}/big.csv", 300_000, 120_000)
rc.hand_over(f"{WORK}/big.csv")

with open(f"{WORK}/big.csv", newline="") as f:
    reader = csv.DictReader(f)
    fields, rows = reader.fieldnames, list(reader)
seen, kept = set(), []
for row in rows:
    key = ref.normalise(row["email"])
    if key not in seen:
        seen.add(key)
        kept.append(row)
with open(f"{PRIVATE}/big_exp.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=fields)
    w.writeheader()
    w.writerows(kept)
exp_stdout = f"kept={len(kept)} dropped={len(rows) - len(kept)}\n"
try:
    r = run("/app/dedupe.py", f"{WORK}/big.csv", f"{WORK}/big_got.csv", 20)
    if r.returncode != 0 or r.stdout != exp_stdout:
        fails.append(f"large case: stdout {r.stdout!r}, expected {exp_stdout!r} {r.stderr[-300:]}")
    elif not same(f"{PRIVATE}/big_exp.csv", f"{WORK}/big_got.csv"):
        fails.append("large case: output file differs")
except subprocess.TimeoutExpired:
    fails.append("large case (300,000 rows) did not finish within 20 s")

for f in fails:
    print("FAIL", f)
if fails:
    sys.exit(1)
print("PASS")
