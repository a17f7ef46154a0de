import csv
import io
import json
import os
import random
import sqlite3
import sys
import tempfile
from datetime import date, timedelta

sys.path.insert(0, "/tests")
import reference_pipeline  # noqa: E402  (the reference implementation of the spec)
import rsr_check as rc  # noqa: E402

# The reference runs here, its outputs in root-only directories (mkdtemp); the pipeline runs as
# nobody and its outputs are read as nobody.
rc.lockdown()
rc.expose("/app")

MILESTONES = ["clean_rows", "rejects", "monthly", "sqlite_db", "summary"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def gen(rng: random.Random, d: str) -> None:
    cats = ["machinery", "electronics", "tools", "safety"]
    products = [{"sku": f"{a}{b}-{n}", "name": f"product {n}", "category": rng.choice(cats)}
                for a, b, n in zip("ABCDEFGH", "KLMNOPQR", range(100, 900, 100))]
    json.dump(products, open(os.path.join(d, "products.json"), "w"))
    start = date(2024, 1, 1)
    with open(os.path.join(d, "rates.csv"), "w") as f:
        f.write("date,currency,rate_to_eur\n")
        for cur, first, base in (("USD", 0, 0.92), ("GBP", 20, 1.16), ("CHF", 60, 1.04)):
            day = first
            while day < 180:
                f.write(f"{start + timedelta(days=day)},{cur},{base + rng.randint(-300, 300) / 10000:.4f}\n")
                day += rng.randint(1, 9)
        f.write("2024-03-15,SEK,0.5000\n")  # makes exact half-cent cases
    customers = ["Acme GmbH", "Blue Ocean Ltd", "Zeta SA", "Nordwind AB", "Kappa & Sons"]
    rows = []
    ids = [f"T{n:05d}" for n in rng.sample(range(1, 99999), 160)]
    for tid in ids:
        day = start + timedelta(days=rng.randint(0, 179))
        fmt = rng.randrange(3)
        ds = [day.isoformat(), day.strftime("%d/%m/%Y"), f"{MONTHS[day.month - 1]} {day.day} {day.year}"][fmt]
        if rng.random() < 0.07:
            ds = rng.choice(["2024-13-01", "31/04/2024", "Feb 30 2024", "2024/01/05", "5 Feb 2024", "", "30/02/2024"])
        sku = rng.choice(products)["sku"] if rng.random() > 0.08 else rng.choice(["ZZ-000", "QQ-1"])
        sku = rng.choice([sku, sku.lower(), f" {sku} "])
        cur = rng.choice(["EUR", "EUR", "USD", "GBP", "CHF", "SEK", "JPY"]) if rng.random() > 0.02 else "JPY"
        cur = rng.choice([cur, cur.lower(), f" {cur}"])
        qty = rng.randint(-3, 40) or 1
        cents = rng.randint(1, 500000) * (1 if qty > 0 else -1)
        if cur.strip().upper() == "SEK":
            cents = rng.randint(1, 400) * 2 + 1  # odd cents x 0.5 -> exact halves
        amt = f"{cents / 100:,.2f}" if abs(cents) >= 100000 and rng.random() < 0.7 else f"{cents / 100:.2f}"
        cust = rng.choice(customers)
        cust = rng.choice([cust, f"  {cust}", f"{cust} "])
        rows.append([tid, ds, cust, sku, str(qty), amt, cur])
    for _ in range(12):  # duplicates: later lines with a known id must be ignored
        dup = list(rng.choice(rows))
        dup[4] = str(int(dup[4]) + 7)
        dup[1] = "2024-02-02"
        rows.insert(rng.randint(rows.index(next(r for r in rows if r[0] == dup[0])) + 1, len(rows)), dup)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["txn_id", "date", "customer", "sku", "qty", "amount", "currency"])
    w.writerows(rows)
    open(os.path.join(d, "transactions.csv"), "w").write(buf.getvalue())


def read(p: str) -> str | None:
    try:
        return rc.read_text(p).replace("\r\n", "\n")
    except OSError:
        return None


def read_want(p: str) -> str | None:
    try:
        return open(p, newline="").read().replace("\r\n", "\n")
    except OSError:
        return None


def check(seed: int, results: dict[str, int], notes: list[str]) -> None:
    rng = random.Random(seed)
    src = rc.scratch("src-")
    gen(rng, src)
    want, got = tempfile.mkdtemp(), os.path.join(rc.scratch("out-"), "out")
    reference_pipeline.main(src, want)
    rc.hand_over(src)
    if not os.access("/app/pipeline", os.X_OK):
        notes.append("/app/pipeline missing or not executable")
        for m in MILESTONES:
            results[m] = 0
        return
    r = rc.run(["/app/pipeline", src, got], timeout=60)
    if r.returncode != 0:
        notes.append(f"seed {seed}: exit {r.returncode}: {r.stderr[-400:]}")
    for m, fn in (("clean_rows", "clean.csv"), ("rejects", "rejects.csv"), ("monthly", "monthly.csv")):
        a, b = read(os.path.join(got, fn)), read_want(os.path.join(want, fn))
        if a != b:
            results[m] = 0
            if a is None:
                notes.append(f"seed {seed}: {fn} missing")
            else:
                diffs = [(x, y) for x, y in zip(a.splitlines(), b.splitlines()) if x != y][:3]
                notes.append(f"seed {seed}: {fn} differs (lines {len(a.splitlines())} vs {len(b.splitlines())}); got/want: {diffs}")
    try:
        with rc.as_user():
            con = sqlite3.connect(f"file:{os.path.join(got, 'report.db')}?mode=ro", uri=True)
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        cols = [(c[1], c[2].upper()) for c in con.execute("PRAGMA table_info(transactions)")]
        want_cols = [("txn_id", "TEXT"), ("date", "TEXT"), ("customer", "TEXT"), ("sku", "TEXT"), ("qty", "INTEGER"), ("amount_eur", "REAL")]
        rows = con.execute("SELECT txn_id, date, customer, sku, qty, amount_eur FROM transactions ORDER BY txn_id").fetchall()
        totals = dict(con.execute("SELECT customer, revenue_eur FROM customer_totals").fetchall())
        ref = sqlite3.connect(os.path.join(want, "report.db"))
        want_rows = ref.execute("SELECT txn_id, date, customer, sku, qty, amount_eur FROM transactions ORDER BY txn_id").fetchall()
        want_totals = dict(ref.execute("SELECT customer, revenue_eur FROM customer_totals").fetchall())
        ok = (cols == want_cols and len(rows) == len(want_rows)
              and all(a[:5] == b[:5] and abs(a[5] - b[5]) < 0.001 for a, b in zip(rows, want_rows))
              and set(totals) == set(want_totals) and all(abs(totals[k] - want_totals[k]) < 0.01 for k in totals))
        if not ok:
            notes.append(f"seed {seed}: report.db differs: cols={cols} rows={len(rows)}/{len(want_rows)} totals={totals} want={want_totals}")
    except (sqlite3.Error, TypeError) as e:
        ok = False
        notes.append(f"seed {seed}: report.db unusable: {e}")
    if not ok:
        results["sqlite_db"] = 0
    try:
        s = json.loads(rc.read_text(os.path.join(got, "summary.json")))
        w = json.load(open(os.path.join(want, "summary.json")))
        ok = (s.get("transactions") == w["transactions"] and s.get("rejected") == w["rejected"]
              and isinstance(s.get("total_revenue_eur"), (int, float)) and abs(s["total_revenue_eur"] - w["total_revenue_eur"]) < 0.005
              and s.get("top_customer") == w["top_customer"])
        if not ok:
            notes.append(f"seed {seed}: summary {s} != {w}")
    except (OSError, ValueError, AttributeError) as e:
        ok = False
        notes.append(f"seed {seed}: summary.json unusable: {e}")
    if not ok:
        results["summary"] = 0


def main() -> int:
    results = {m: 1 for m in MILESTONES}
    notes: list[str] = []
    for seed in (11, 12, 13):
        check(seed, results, notes)
    reward = int(all(results.values()))
    print("\n".join(notes))
    print(json.dumps(results))
    rc.write_reward(reward, results)
    return 0 if reward else 1


sys.exit(main())
