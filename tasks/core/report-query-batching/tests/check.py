"""Compares report.py's output with the original program on fresh databases and counts the SQL
statements it executes through sqlite3's trace callback.

report.py runs as nobody (rsr_check), under count_run.py's tracing; the expected report is made
here by the original program into a root-only directory and compared with what report.py wrote,
read as nobody. The statement count comes from the process that runs report.py, so a hostile
report.py could misreport it; the output itself cannot be faked without computing it."""
import subprocess
import sys
import tempfile

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")
PRIVATE = tempfile.mkdtemp()
WORK = rc.scratch("shop-")
COUNT_RUN = open("/tests/count_run.py").read()  # /tests is closed to nobody: hand the code over
fails = []
for seed, n in [(11, 40), (12, 400), (13, 2500)]:
    if fails:
        break  # one failing database is enough; skip the slow larger ones
    db = f"{WORK}/shop{seed}.db"
    ref_db = f"{PRIVATE}/shop{seed}.db"
    subprocess.run(["python3", "-I", "/tests/gen_db.py", ref_db, str(seed), str(n)], check=True)
    subprocess.run(["cp", ref_db, db], check=True)
    rc.hand_over(db)
    # The original is quadratic without indexes; run it on an indexed copy (every ORDER BY is a
    # total order, so indexes cannot change its output).
    subprocess.run(["sqlite3", ref_db, "CREATE INDEX oc ON orders(customer_id); CREATE INDEX io ON items(order_id);"],
                   check=True)
    subprocess.run(["python3", "-I", "/tests/report_original.py", ref_db, f"{PRIVATE}/exp{seed}.json"], check=True,
                   timeout=300)
    try:
        r = rc.run(["python3", "-I", "-c", COUNT_RUN, db, f"{WORK}/got{seed}.json"], timeout=120)
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
    try:
        same = open(f"{PRIVATE}/exp{seed}.json", "rb").read() == rc.read_bytes(f"{WORK}/got{seed}.json")
    except OSError:
        same = False
    if not same:
        fails.append(f"db {seed}: output differs from the original report")
for f in fails:
    print("FAIL", f)
if fails:
    sys.exit(1)
print("PASS")
