"""Generates a shop database with the documented schema; shared by the image build and the test."""
import random
import sqlite3
import sys

SCHEMA = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT NOT NULL);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
                     ordered_at TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE order_items (order_id INTEGER NOT NULL REFERENCES orders(id), product TEXT NOT NULL,
                          quantity INTEGER NOT NULL, unit_price_cents INTEGER NOT NULL);
"""


def build(path: str, seed: int) -> None:
    rng = random.Random(seed)
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    names = ["Anna", "Ben", "Chloe", "Dmitri", "Eva", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kira", "Lars"]
    for i in range(1, rng.randint(8, 14)):
        con.execute("INSERT INTO customers VALUES (?, ?, ?)",
                    (i, f"{rng.choice(names)} {chr(65 + i)}.", rng.choice(["DE", "FR", "NO", "US"])))
    ncust = con.execute("SELECT count(*) FROM customers").fetchone()[0]
    oid = 0
    for _ in range(rng.randint(60, 150)):
        oid += 1
        year = rng.choice([2022, 2023, 2023, 2023, 2024])
        ts = f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00"
        status = rng.choice(["shipped", "delivered", "delivered", "cancelled", "pending"])
        con.execute("INSERT INTO orders VALUES (?, ?, ?, ?)", (oid, rng.randint(1, ncust), ts, status))
        for _ in range(rng.randint(1, 4)):
            con.execute("INSERT INTO order_items VALUES (?, ?, ?, ?)",
                        (oid, rng.choice(["pen", "ink", "paper", "desk"]), rng.randint(1, 9), rng.choice([99, 250, 1999, 12500, 5000])))
    # Boundary timestamps: New Year's Eve and New Year's Day at midnight.
    oid += 1
    con.execute("INSERT INTO orders VALUES (?, 1, '2023-12-31T23:59:59', 'shipped')", (oid,))
    con.execute("INSERT INTO order_items VALUES (?, 'desk', 1, 30000)", (oid,))
    oid += 1
    con.execute("INSERT INTO orders VALUES (?, 2, '2024-01-01T00:00:00', 'delivered')", (oid,))
    con.execute("INSERT INTO order_items VALUES (?, 'desk', 3, 30000)", (oid,))
    con.commit()
    con.close()


if __name__ == "__main__":
    build(sys.argv[1], int(sys.argv[2]))
