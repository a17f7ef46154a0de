"""Customer order report.

usage: python3 report.py SHOP.db OUT.json

Writes every customer (by id) with their orders (by date, then id) and each order's items
(by item id), plus per-order and per-customer totals in cents.
"""
import json
import sqlite3
import sys


def product_name(conn, product_id):
    row = conn.execute("SELECT name FROM products WHERE id = ?", (product_id,)).fetchone()
    if row is None:
        return "(deleted)"
    return row[0] if row[0] is not None else "(unknown)"


def order_items(conn, order_id):
    items = []
    for item_id, product_id, qty, unit_cents in conn.execute(
            "SELECT id, product_id, qty, unit_cents FROM items WHERE order_id = ? ORDER BY id", (order_id,)):
        items.append({"product": product_name(conn, product_id), "qty": qty,
                      "line_cents": qty * unit_cents})
    return items


def customer_orders(conn, customer_id):
    orders = []
    for order_id, placed, status in conn.execute(
            "SELECT id, placed, status FROM orders WHERE customer_id = ? ORDER BY placed, id", (customer_id,)):
        items = order_items(conn, order_id)
        orders.append({"id": order_id, "placed": placed, "status": status, "items": items,
                       "total_cents": sum(i["line_cents"] for i in items)})
    return orders


def main(db, out):
    conn = sqlite3.connect(db)
    report = []
    for customer_id, name, country in conn.execute("SELECT id, name, country FROM customers ORDER BY id").fetchall():
        orders = customer_orders(conn, customer_id)
        report.append({"id": customer_id, "name": name, "country": country, "orders": orders,
                       "total_cents": sum(o["total_cents"] for o in orders if o["status"] != "cancelled")})
    with open(out, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
