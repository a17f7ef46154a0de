import csv
import hashlib
import io
import json
import os
import random
import sqlite3
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

# The agent's SQL runs in the sqlite3 shell as nobody (its dot-commands can run programs); the
# checker then drives the resulting databases through SQL only (no extensions).
rc.lockdown()
rc.expose("/app")

MILESTONES = ["schema_objects", "stock_tracking", "negative_stock_guard", "immutability", "low_stock_view", "transfers", "initial_load"]
notes: list[str] = []


class Model:
    """Independent model of the ledger rules."""

    def __init__(self, skus, locs):
        self.skus, self.locs, self.stock, self.count = set(skus), set(locs), {}, 0

    def movement(self, kind, sku, loc, qty):
        ok_sign = ((kind in ("receipt", "transfer_in") and qty > 0) or (kind in ("shipment", "transfer_out") and qty < 0)
                   or (kind == "adjustment" and qty != 0))
        if not ok_sign or sku not in self.skus or loc not in self.locs:
            return "invalid"
        if self.stock.get((sku, loc), 0) + qty < 0:
            return "insufficient"
        self.stock[(sku, loc)] = self.stock.get((sku, loc), 0) + qty
        self.count += 1
        return "ok"

    def transfer(self, sku, a, b, qty):
        if qty <= 0 or a == b or sku not in self.skus or a not in self.locs or b not in self.locs:
            return "invalid"
        if self.stock.get((sku, a), 0) - qty < 0:
            return "insufficient"
        self.movement("transfer_out", sku, a, -qty)
        self.movement("transfer_in", sku, b, qty)
        return "ok"


def fresh_db():
    path = os.path.join(rc.scratch(), "t.db")
    r = rc.run(["sqlite3", path], input=rc.read_text("/app/schema.sql"), timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"schema.sql failed: {r.stderr[-300:]}")
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA foreign_keys = ON")
    return con


def setup(con, skus, locs, levels=None):
    for loc in locs:
        con.execute("INSERT INTO locations VALUES (?)", (loc,))
    for s in skus:
        con.execute("INSERT INTO products (sku, name, reorder_level) VALUES (?, ?, ?)", (s, f"name of {s}", (levels or {}).get(s, 0)))


def try_exec(con, sql, args=()):
    try:
        con.execute(sql, args)
        return "ok", ""
    except sqlite3.DatabaseError as e:
        return "error", str(e)


def mv(con, kind, sku, loc, qty, ref="r"):
    return try_exec(con, "INSERT INTO movements (sku, location, kind, qty, ref) VALUES (?, ?, ?, ?, ?)", (sku, loc, kind, qty, ref))


def stock_of(con):
    return {(s, l): q for s, l, q in con.execute("SELECT sku, location, qty FROM stock")}


def schema_objects():
    con = fresh_db()
    want = {
        "products": [("sku", "TEXT", 0, 1), ("name", "TEXT", 1, 0), ("reorder_level", "INTEGER", 1, 0)],
        "locations": [("code", "TEXT", 0, 1)],
        "movements": [("id", "INTEGER", 0, 1), ("sku", "TEXT", 1, 0), ("location", "TEXT", 1, 0), ("kind", "TEXT", 1, 0), ("qty", "INTEGER", 1, 0), ("ref", "TEXT", 0, 0)],
        "stock": [("sku", "TEXT", 1, 1), ("location", "TEXT", 1, 2), ("qty", "INTEGER", 1, 0)],
    }
    ok = True
    for t, cols in want.items():
        got = [(r[1], r[2].upper(), r[3], r[5]) for r in con.execute(f"PRAGMA table_info({t})")]
        if got != cols:
            ok = False
            notes.append(f"schema: {t} columns {got}")
    for t in ("movements", "stock"):
        fks = {(r[2], r[3], r[4]) for r in con.execute(f"PRAGMA foreign_key_list({t})")}
        if not {("products", "sku", "sku"), ("locations", "location", "code")} <= fks:
            ok = False
            notes.append(f"schema: {t} foreign keys {fks}")
    setup(con, ["A"], ["L1"])
    if try_exec(con, "INSERT INTO products VALUES ('B', 'b', -1)")[0] == "ok":
        ok = False
        notes.append("schema: negative reorder_level accepted")
    if mv(con, "receipt", "NOPE", "L1", 5)[0] == "ok" or mv(con, "receipt", "A", "NOWHERE", 5)[0] == "ok":
        ok = False
        notes.append("schema: movement for unknown sku/location accepted")
    return ok


def stock_tracking():
    rng = random.Random(5150)
    skus, locs = [f"S{i}" for i in range(4)], ["L1", "L2", "L3"]
    con = fresh_db()
    setup(con, skus, locs)
    m = Model(skus, locs)
    ok = True
    for i in range(250):
        kind = rng.choice(["receipt", "receipt", "shipment", "adjustment", "transfer_in", "transfer_out", "bogus"])
        qty = rng.choice([rng.randint(1, 50), -rng.randint(1, 50), 0])
        sku, loc = rng.choice(skus), rng.choice(locs)
        want = m.movement(kind, sku, loc, qty)
        got, msg = mv(con, kind, sku, loc, qty)
        if (want == "ok") != (got == "ok"):
            ok = False
            notes.append(f"stock: movement {kind} {sku} {loc} {qty}: want {want}, got {got} {msg}")
            break
    st = stock_of(con)
    if st != m.stock:
        ok = False
        notes.append(f"stock: table differs from the sum of movements: {sorted(set(st.items()) ^ set(m.stock.items()))[:4]}")
    n = con.execute("SELECT count(*) FROM movements").fetchone()[0]
    if n != m.count:
        ok = False
        notes.append(f"stock: {n} movement rows, want {m.count}")
    return ok


def negative_stock_guard():
    con = fresh_db()
    setup(con, ["A"], ["L1", "L2"])
    ok = True
    mv(con, "receipt", "A", "L1", 10)
    for kind, loc, qty in (("shipment", "L1", -11), ("adjustment", "L1", -20), ("shipment", "L2", -1), ("adjustment", "L2", -3)):
        before = (stock_of(con), con.execute("SELECT count(*) FROM movements").fetchone()[0])
        got, msg = mv(con, kind, "A", loc, qty)
        after = (stock_of(con), con.execute("SELECT count(*) FROM movements").fetchone()[0])
        if got == "ok" or "insufficient stock" not in msg or before != after:
            ok = False
            notes.append(f"guard: {kind} {qty} at {loc}: got {got} {msg!r}; changed={before != after}")
    if mv(con, "shipment", "A", "L1", -10)[0] != "ok" or stock_of(con).get(("A", "L1")) != 0:
        ok = False
        notes.append("guard: shipping exactly the stock on hand must work and leave 0")
    return ok


def immutability():
    con = fresh_db()
    setup(con, ["A"], ["L1"])
    mv(con, "receipt", "A", "L1", 10)
    mv(con, "receipt", "A", "L1", 5)
    ok = True
    for sql in ("UPDATE movements SET qty = 100", "UPDATE movements SET ref = 'x' WHERE id = (SELECT min(id) FROM movements)",
                "DELETE FROM movements", "DELETE FROM movements WHERE qty = 5"):
        got, msg = try_exec(con, sql)
        if got == "ok" or "movements are immutable" not in msg:
            ok = False
            notes.append(f"immutable: {sql!r} -> {got} {msg!r}")
    rows = con.execute("SELECT qty, ref FROM movements ORDER BY id").fetchall()
    if rows != [(10, "r"), (5, "r")] or stock_of(con) != {("A", "L1"): 15}:
        ok = False
        notes.append(f"immutable: data changed: {rows}")
    return ok


def low_stock_view():
    con = fresh_db()
    levels = {"A": 10, "B": 10, "C": 0, "D": 5, "E": 7}
    setup(con, list(levels), ["L1", "L2"], levels)
    for sku, loc, q in (("A", "L1", 4), ("A", "L2", 6), ("B", "L1", 9), ("C", "L1", 1), ("E", "L2", 8)):
        mv(con, "receipt", sku, loc, q)
    mv(con, "shipment", "E", "L2", -2)
    try:
        got = set(con.execute("SELECT sku, name, on_hand, reorder_level FROM low_stock"))
    except sqlite3.DatabaseError as e:
        notes.append(f"low_stock: {e}")
        return False
    want = {("B", "name of B", 9, 10), ("D", "name of D", 0, 5), ("E", "name of E", 6, 7)}
    if got != want:
        notes.append(f"low_stock: got {sorted(got)} want {sorted(want)}")
        return False
    return True


def transfers():
    con = fresh_db()
    setup(con, ["A", "B"], ["L1", "L2", "L3"])
    mv(con, "receipt", "A", "L1", 10)
    ok = True

    def tr(sku, a, b, q, ref):
        return try_exec(con, "INSERT INTO transfer_requests (sku, from_location, to_location, qty, ref) VALUES (?, ?, ?, ?, ?)", (sku, a, b, q, ref))

    got, msg = tr("A", "L1", "L2", 4, "T1")
    rows = con.execute("SELECT sku, location, kind, qty, ref FROM movements WHERE ref = 'T1' ORDER BY id").fetchall()
    if got != "ok" or rows != [("A", "L1", "transfer_out", -4, "T1"), ("A", "L2", "transfer_in", 4, "T1")]:
        ok = False
        notes.append(f"transfer: valid transfer -> {got} {msg!r}, movements {rows}")
    for args, needs_msg in ((("A", "L1", "L3", 7, "T2"), True), (("B", "L1", "L2", 1, "T3"), True),
                            (("A", "L1", "L2", 0, "T4"), False), (("A", "L1", "L2", -2, "T5"), False), (("A", "L2", "L2", 1, "T6"), False)):
        before = (stock_of(con), con.execute("SELECT count(*) FROM movements").fetchone()[0])
        got, msg = tr(*args)
        after = (stock_of(con), con.execute("SELECT count(*) FROM movements").fetchone()[0])
        if got == "ok" or before != after or (needs_msg and "insufficient stock" not in msg):
            ok = False
            notes.append(f"transfer: {args} -> {got} {msg!r}, changed={before != after}")
    if stock_of(con) != {("A", "L1"): 6, ("A", "L2"): 4}:
        ok = False
        notes.append(f"transfer: final stock {stock_of(con)}")
    return ok


# The data the agent was given; the reference replays /app/data only if it is unmodified.
DATA_SHA256 = {'locations.txt': 'd7bf1b53e216160aa7bedc5d5e7ffeee4f9bd1efcccdef8a9b3fcf006e845334', 'products.csv': '569770ed7309674527d3341fe2c0738df6f234de8ac330db05f9f9bbf76aa418', 'movements.csv': '869852010af96c1343e69f64cbc07004f600229621b96fd2e58b5323fc0d7a56'}


def initial_load():
    d = "/app/data"
    for name, digest in DATA_SHA256.items():
        if hashlib.sha256(rc.read_bytes(f"{d}/{name}")).hexdigest() != digest:
            notes.append(f"load: {d}/{name} was modified")
            return False
    locs = rc.read_text(f"{d}/locations.txt").split()
    prods = list(csv.DictReader(io.StringIO(rc.read_text(f"{d}/products.csv"))))
    m = Model([p["sku"] for p in prods], locs)
    rejected = []
    for n, r in enumerate(csv.DictReader(io.StringIO(rc.read_text(f"{d}/movements.csv"))), 1):
        if r["kind"] == "transfer":
            a, b = r["location"].split(">")
            res = m.transfer(r["sku"], a, b, int(r["qty"]))
        else:
            res = m.movement(r["kind"], r["sku"], r["location"], int(r["qty"]))
        if res != "ok":
            rejected.append(n)
    try:
        with rc.as_user():
            con = sqlite3.connect("file:/app/inventory.db?mode=ro", uri=True)
            st = stock_of(con)
        n = con.execute("SELECT count(*) FROM movements").fetchone()[0]
    except sqlite3.DatabaseError as e:
        notes.append(f"load: /app/inventory.db unusable: {e}")
        return False
    ok = True
    if st != m.stock or n != m.count:
        ok = False
        notes.append(f"load: stock/movements differ from the data (movements {n} vs {m.count})")
    try:
        got = [int(x) for x in rc.read_text("/app/rejected.txt").split()]
    except (OSError, ValueError) as e:
        got = f"unreadable: {e}"
    if got != rejected:
        ok = False
        notes.append(f"load: rejected.txt {got} != {rejected}")
    return ok


results = {}
for fn in (schema_objects, stock_tracking, negative_stock_guard, immutability, low_stock_view, transfers, initial_load):
    try:
        results[fn.__name__] = int(bool(fn()))
    except Exception as e:  # a broken schema fails that milestone instead of crashing the checker
        notes.append(f"{fn.__name__}: {e!r}")
        results[fn.__name__] = 0
reward = int(all(results.values()))
print("\n".join(notes))
print(json.dumps(results))
rc.write_reward(reward, results)
sys.exit(0 if reward else 1)
