"""Writes a seeded random shop database: gen_db.py PATH SEED CUSTOMERS."""
import random
import sqlite3
import sys

path, seed, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
conn = sqlite3.connect(path)
conn.executescript("""
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT);
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, placed TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE items (id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL, product_id INTEGER NOT NULL, qty INTEGER NOT NULL, unit_cents INTEGER NOT NULL);
""")
nprod = max(5, n // 3)
for p in range(1, nprod + 1):
    conn.execute("INSERT INTO products VALUES (?, ?)", (p, None if rng.random() < 0.05 else f"Product {p} \u00e9"))
cids = rng.sample(range(1, n * 3), n)
for c in cids:
    conn.execute("INSERT INTO customers VALUES (?, ?, ?)", (c, f"Customer {c}", rng.choice(["PT", "NG", None, "IT"])))
oid, iid = 0, 0
order_ids = list(range(1, n * 6))
rng.shuffle(order_ids)
item_ids = list(range(1, n * 40))
rng.shuffle(item_ids)
for c in cids:
    for _ in range(rng.choice([0, 0, 1, 2, 3, 5, 8])):
        o = order_ids[oid]; oid += 1
        day = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        conn.execute("INSERT INTO orders VALUES (?, ?, ?, ?)", (o, c, day, rng.choice(["paid", "paid", "shipped", "cancelled"])))
        for _ in range(rng.randint(0, 5)):
            i = item_ids[iid]; iid += 1
            prod = rng.randint(1, nprod + 3)  # a few point at deleted products
            conn.execute("INSERT INTO items VALUES (?, ?, ?, ?, ?)", (i, o, prod, rng.randint(1, 9), rng.randint(50, 99999)))
# An order of a customer that no longer exists must not appear anywhere.
conn.execute("INSERT INTO orders VALUES (?, ?, ?, ?)", (order_ids[oid], 0, "2024-01-01", "paid"))
conn.commit()
