"""Compares the agent's dedupe.py with the original on small inputs, then requires it to finish a
300,000-row input (where the quadratic original cannot) with the same output as a reference."""
import csv
import filecmp
import random
import subprocess
import sys

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
    return subprocess.run(["python3", script, src, dst], capture_output=True, text=True, timeout=timeout)


for k, (n, pool) in enumerate([(50, 5), (400, 20), (2000, 300), (3000, 5000)]):
    src = f"/tmp/small{k}.csv"
    make_csv(src, n, pool)
    a = run("/tests/dedupe_original.py", src, f"/tmp/exp{k}.csv", 120)
    try:
        b = run("/app/dedupe.py", src, f"/tmp/got{k}.csv", 60)
    except subprocess.TimeoutExpired:
        fails.append(f"small case {k}: timed out")
        continue
    if b.returncode != 0 or a.stdout != b.stdout or not filecmp.cmp(f"/tmp/exp{k}.csv", f"/tmp/got{k}.csv", shallow=False):
        fails.append(f"small case {k} ({n} rows): output differs from the original ({b.stdout!r} vs {a.stdout!r}) {b.stderr[-300:]}")

# Large case: expected output computed here with a linear-time copy of the original semantics.
make_csv("/tmp/big.csv", 300_000, 120_000)
sys.path.insert(0, "/tests")
import dedupe_original as ref  # noqa: E402

with open("/tmp/big.csv", newline="") as f:
    reader = csv.DictReader(f)
    fields, rows = reader.fieldnames, list(reader)
seen, kept = set(), []
for row in rows:
    key = ref.normalise(row["email"])
    if key not in seen:
        seen.add(key)
        kept.append(row)
with open("/tmp/big_exp.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=fields)
    w.writeheader()
    w.writerows(kept)
exp_stdout = f"kept={len(kept)} dropped={len(rows) - len(kept)}\n"
try:
    r = run("/app/dedupe.py", "/tmp/big.csv", "/tmp/big_got.csv", 20)
    if r.returncode != 0 or r.stdout != exp_stdout:
        fails.append(f"large case: stdout {r.stdout!r}, expected {exp_stdout!r} {r.stderr[-300:]}")
    elif not filecmp.cmp("/tmp/big_exp.csv", "/tmp/big_got.csv", shallow=False):
        fails.append("large case: output file differs")
except subprocess.TimeoutExpired:
    fails.append("large case (300,000 rows) did not finish within 20 s")

for f in fails:
    print("FAIL", f)
if fails:
    sys.exit(1)
print("PASS")
