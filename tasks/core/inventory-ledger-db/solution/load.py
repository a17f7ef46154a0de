#!/usr/bin/env python3
"""Loads /app/data into /app/inventory.db row by row, recording rows the database rejects."""
import csv
import os
import sqlite3
import subprocess

DB = "/app/inventory.db"
if os.path.exists(DB):
    os.remove(DB)
subprocess.run(["sqlite3", DB], stdin=open("/app/schema.sql"), check=True)
con = sqlite3.connect(DB, isolation_level=None)
con.execute("PRAGMA foreign_keys = ON")
for code in open("/app/data/locations.txt").read().split():
    con.execute("INSERT INTO locations VALUES (?)", (code,))
for r in csv.DictReader(open("/app/data/products.csv")):
    con.execute("INSERT INTO products VALUES (?, ?, ?)", (r["sku"], r["name"], int(r["reorder_level"])))
rejected = []
for n, r in enumerate(csv.DictReader(open("/app/data/movements.csv")), 1):
    try:
        if r["kind"] == "transfer":
            src, dst = r["location"].split(">")
            con.execute("INSERT INTO transfer_requests VALUES (?, ?, ?, ?, ?)", (r["sku"], src, dst, int(r["qty"]), r["ref"]))
        else:
            con.execute("INSERT INTO movements (sku, location, kind, qty, ref) VALUES (?, ?, ?, ?, ?)",
                        (r["sku"], r["location"], r["kind"], int(r["qty"]), r["ref"]))
    except sqlite3.DatabaseError:
        rejected.append(n)
open("/app/rejected.txt", "w").write("".join(f"{n}\n" for n in rejected))
