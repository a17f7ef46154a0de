import csv
import io
import os
import sqlite3
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402
from gen_shop import build  # noqa: E402

rc.lockdown()


def expected(db: str) -> list[list[str]]:
    con = sqlite3.connect(db)
    cust = {r[0]: r[1:] for r in con.execute("SELECT id, name, country FROM customers")}
    orders = {r[0]: r[1] for r in con.execute("SELECT id, customer_id FROM orders WHERE ordered_at LIKE '2023-%' AND status IN ('shipped','delivered')")}
    rev, cnt = {}, {}
    for oid, cid in orders.items():
        cnt[cid] = cnt.get(cid, 0) + 1
        rev.setdefault(cid, 0)
    for oid, q, p in con.execute("SELECT order_id, quantity, unit_price_cents FROM order_items"):
        if oid in orders:
            rev[orders[oid]] += q * p
    rows = sorted(rev, key=lambda c: (-rev[c], cust[c][0], c))[:5]
    return [["name", "country", "orders", "revenue_cents"]] + [[cust[c][0], cust[c][1], str(cnt[c]), str(rev[c])] for c in rows]


def main() -> int:
    try:
        sql = rc.read_text("/app/top_customers.sql")
    except OSError:
        print("FAIL: /app/top_customers.sql missing")
        return 1
    bad = 0
    for seed in (101, 102, 103, 104):
        db = os.path.join(rc.scratch(), "t.db")
        build(db, seed)
        # Same names for different customers must still be separate rows.
        sqlite3.connect(db).execute("UPDATE customers SET name = (SELECT name FROM customers WHERE id = 1) WHERE id = 3").connection.commit()
        want = expected(db)
        rc.hand_over(os.path.dirname(db))
        # The agent's SQL (dot-commands included) runs as nobody.
        r = rc.run(["sqlite3", "-header", "-csv", db], input=sql, timeout=30)
        got = [row for row in csv.reader(io.StringIO(r.stdout))]
        if r.returncode != 0 or got != want:
            bad += 1
            print(f"FAIL seed {seed}: rc={r.returncode} {r.stderr[-300:]}\nwant {want}\ngot  {got}")
    if bad:
        return 1
    print("PASS: query correct on all databases")
    return 0


sys.exit(main())
