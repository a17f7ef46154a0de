"""Compares report.py's output with the original program on fresh databases and counts the SQL
statements it executes through sqlite3's trace callback."""
import filecmp
import subprocess
import sys

fails = []
for seed, n in [(11, 40), (12, 400), (13, 2500)]:
    if fails:
        break  # one failing database is enough; skip the slow larger ones
    db = f"/tmp/shop{seed}.db"
    subprocess.run(["rm", "-f", db])
    subprocess.run(["python3", "/tests/gen_db.py", db, str(seed), str(n)], check=True)
    # The original is quadratic without indexes; run it on an indexed copy (every ORDER BY is a
    # total order, so indexes cannot change its output).
    subprocess.run(["cp", db, db + ".idx"], check=True)
    subprocess.run(["sqlite3", db + ".idx", "CREATE INDEX oc ON orders(customer_id); CREATE INDEX io ON items(order_id);"], check=True)
    subprocess.run(["python3", "/tests/report_original.py", db + ".idx", f"/tmp/exp{seed}.json"], check=True, timeout=300)
    try:
        r = subprocess.run(["python3", "/tests/count_run.py", db, f"/tmp/got{seed}.json"],
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        fails.append(f"db {seed}: report.py timed out")
        continue
    lines = [l for l in r.stdout.splitlines() if l.startswith("STATEMENTS=")]
    count = int(lines[-1].split("=")[1]) if lines else None
    if r.returncode != 0:
        fails.append(f"db {seed}: report.py failed: {r.stderr[-400:]}")
        continue
    if count is None or count == 0 or count > 4:
        fails.append(f"db {seed} ({n} customers): {count} SQL statements executed, at most 4 allowed "
                     "(0 means the database was not read through sqlite3.connect)")
    if not filecmp.cmp(f"/tmp/exp{seed}.json", f"/tmp/got{seed}.json", shallow=False):
        fails.append(f"db {seed}: output differs from the original report")
for f in fails:
    print("FAIL", f)
if fails:
    sys.exit(1)
print("PASS")
