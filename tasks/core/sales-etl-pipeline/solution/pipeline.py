#!/usr/bin/env python3
"""Nightly sales pipeline: normalise, dedupe, reject, convert to EUR, roll up, load SQLite."""
import bisect
import csv
import json
import os
import sqlite3
import sys
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def parse_date(s: str) -> date | None:
    s = s.strip()
    for fmt in ("%Y-%m-%d", "%d/%m/%Y", "%b %d %Y"):
        try:
            d = datetime.strptime(s, fmt).date()
        except ValueError:
            continue
        # strptime is lenient about digit counts; insist on the documented shapes.
        if fmt == "%Y-%m-%d" and len(s) != 10:
            continue
        if fmt == "%d/%m/%Y" and len(s) != 10:
            continue
        return d
    return None


def main(src: str, dst: str) -> None:
    os.makedirs(dst, exist_ok=True)
    products = {p["sku"]: p for p in json.load(open(os.path.join(src, "products.json")))}
    rates: dict[str, list[tuple[date, Decimal]]] = {}
    with open(os.path.join(src, "rates.csv"), newline="") as f:
        for r in csv.DictReader(f):
            rates.setdefault(r["currency"].strip().upper(), []).append(
                (date.fromisoformat(r["date"].strip()), Decimal(r["rate_to_eur"].strip())))
    for v in rates.values():
        v.sort()

    seen: set[str] = set()
    clean, rejects = [], []
    with open(os.path.join(src, "transactions.csv"), newline="") as f:
        for r in csv.DictReader(f):
            tid = r["txn_id"].strip()
            if tid in seen:
                continue
            seen.add(tid)
            sku, cur, cust = r["sku"].strip().upper(), r["currency"].strip().upper(), r["customer"].strip()
            d = parse_date(r["date"])
            if d is None:
                rejects.append((tid, "bad_date"))
                continue
            if sku not in products:
                rejects.append((tid, "unknown_sku"))
                continue
            if cur == "EUR":
                rate = Decimal(1)
            else:
                series = rates.get(cur, [])
                i = bisect.bisect_right([x[0] for x in series], d)
                if i == 0:
                    rejects.append((tid, "no_rate"))
                    continue
                rate = series[i - 1][1]
            amount = Decimal(r["amount"].replace(",", "").strip())
            eur = (amount * rate).quantize(CENT, rounding=ROUND_HALF_UP)
            clean.append((tid, d.isoformat(), cust, sku, int(r["qty"]), eur))

    clean.sort(key=lambda t: (t[1], t[0]))
    rejects.sort()
    with open(os.path.join(dst, "clean.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["txn_id", "date", "customer", "sku", "qty", "amount_eur"])
        for t in clean:
            w.writerow([*t[:5], f"{t[5]:.2f}"])
    with open(os.path.join(dst, "rejects.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["txn_id", "reason"])
        w.writerows(rejects)

    monthly: dict[tuple[str, str], list] = {}
    for t in clean:
        key = (t[1][:7], products[t[3]]["category"])
        m = monthly.setdefault(key, [0, Decimal(0)])
        m[0] += t[4]
        m[1] += t[5]
    with open(os.path.join(dst, "monthly.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["month", "category", "units", "revenue_eur"])
        for (month, cat) in sorted(monthly):
            units, rev = monthly[(month, cat)]
            w.writerow([month, cat, units, f"{rev:.2f}"])

    db = os.path.join(dst, "report.db")
    if os.path.exists(db):
        os.remove(db)
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE transactions (txn_id TEXT PRIMARY KEY, date TEXT, customer TEXT, sku TEXT, qty INTEGER, amount_eur REAL)")
    con.executemany("INSERT INTO transactions VALUES (?, ?, ?, ?, ?, ?)", [(*t[:5], float(t[5])) for t in clean])
    con.execute("CREATE VIEW customer_totals AS SELECT customer, round(sum(amount_eur), 2) AS revenue_eur FROM transactions GROUP BY customer")
    con.commit()
    con.close()

    per_cust: dict[str, Decimal] = {}
    for t in clean:
        per_cust[t[2]] = per_cust.get(t[2], Decimal(0)) + t[5]
    top = min(per_cust.items(), key=lambda kv: (-kv[1], kv[0]))[0] if per_cust else None
    summary = {"transactions": len(clean), "rejected": len(rejects),
               "total_revenue_eur": float(sum((t[5] for t in clean), Decimal(0))), "top_customer": top}
    json.dump(summary, open(os.path.join(dst, "summary.json"), "w"), indent=2)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
