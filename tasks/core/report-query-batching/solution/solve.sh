#!/bin/bash
set -e
cat > /app/report.py <<'PY'
"""Customer order report.

usage: python3 report.py SHOP.db OUT.json

Writes every customer (by id) with their orders (by date, then id) and each order's items
(by item id), plus per-order and per-customer totals in cents. Three queries in total: rows are
fetched per table and assembled in memory.
"""
import json
import sqlite3
import sys


def main(db, out):
    conn = sqlite3.connect(db)
    customers = conn.execute("SELECT id, name, country FROM customers ORDER BY id").fetchall()
    orders_by_customer = {}
    orders = {}
    for order_id, customer_id, placed, status in conn.execute(
            "SELECT id, customer_id, placed, status FROM orders ORDER BY placed, id"):
        order = {"id": order_id, "placed": placed, "status": status, "items": [], "total_cents": 0}
        orders[order_id] = order
        orders_by_customer.setdefault(customer_id, []).append(order)
    for order_id, product_exists, name, qty, unit_cents in conn.execute(
            "SELECT i.order_id, p.id IS NOT NULL, p.name, i.qty, i.unit_cents "
            "FROM items i LEFT JOIN products p ON p.id = i.product_id ORDER BY i.id"):
        order = orders.get(order_id)
        if order is None:
            continue
        product = "(deleted)" if not product_exists else (name if name is not None else "(unknown)")
        order["items"].append({"product": product, "qty": qty, "line_cents": qty * unit_cents})
        order["total_cents"] += qty * unit_cents
    report = []
    for customer_id, name, country in customers:
        mine = orders_by_customer.get(customer_id, [])
        report.append({"id": customer_id, "name": name, "country": country, "orders": mine,
                       "total_cents": sum(o["total_cents"] for o in mine if o["status"] != "cancelled")})
    with open(out, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
PY
