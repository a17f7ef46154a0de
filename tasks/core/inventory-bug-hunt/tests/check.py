"""One milestone per bug report; every check drives the public API with generated scenarios."""
import csv
import json
import os
import random
import sys
from decimal import Decimal

sys.path.insert(0, "/app")
rng = random.Random(5150)
notes = []


def expect(cond, msg):
    if not cond:
        notes.append(msg)
        raise AssertionError(msg)


def api():
    import stockd
    return stockd


def m_tags_isolated():
    s = api()
    inv = s.Inventory()
    a = inv.add_item("A", "a")
    b = inv.add_item("B", "b")
    c = inv.add_item("C", "c", tags=["x", "x", "y"])
    a.tag("fragile")
    a.tag("fragile")
    d = inv.add_item("D", "d")
    expect(a.tags == ["fragile"], f"a.tags = {a.tags}")
    expect(b.tags == [] and d.tags == [], f"untagged items got tags: {b.tags} {d.tags}")
    expect(c.tags == ["x", "y"], f"c.tags = {c.tags}")
    inv2 = s.Inventory()
    e = inv2.add_item("E", "e")
    expect(e.tags == [], f"item in a new inventory starts with tags {e.tags}")


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sku", "name", "qty", "unit_cost", "tags"])
        w.writerows(rows)


def m_import_complete():
    s = api()
    inv = s.Inventory()
    rows, qty = [], {}
    for i in range(60):
        sku = f"S{rng.randrange(15):02d}"
        q = rng.choice([1, 7, 999, 1000, 1200, 25000, 1234567])
        shown = f"{q:,}" if rng.random() < 0.5 else str(q)
        rows.append([sku, f"Thing, model {sku}", shown, f"{rng.randint(1, 9999) / 100:.2f}",
                     "|".join(rng.sample(["a", "b", "c"], rng.randint(0, 2)))])
        qty[sku] = qty.get(sku, 0) + q
    write_csv("/tmp/imp.csv", rows)
    n = s.import_csv(inv, "/tmp/imp.csv")
    expect(n == 60, f"import_csv returned {n}, expected 60")
    for sku, q in qty.items():
        expect(inv.level(sku) == q, f"{sku}: level {inv.level(sku)}, expected {q}")
    expect(inv.item(rows[0][0]).name == rows[0][1], "name with a comma not imported")


def m_fresh_levels():
    s = api()
    inv = s.Inventory()
    inv.add_item("L", "l")
    model = 0
    for step in range(200):
        if rng.random() < 0.55 or model == 0:
            q = rng.randint(1, 20)
            inv.receive("L", q, "1.00")
            model += q
        else:
            q = rng.randint(1, model)
            inv.issue("L", q)
            model -= q
        expect(inv.level("L") == model, f"step {step}: level {inv.level('L')}, expected {model}")


def fifo_model(lots, qty):
    cost = Decimal(0)
    while qty:
        q, c = lots[0]
        take = min(q, qty)
        cost += take * c
        qty -= take
        if take == q:
            lots.pop(0)
        else:
            lots[0] = (q - take, c)
    return cost


def m_fifo_cost():
    s = api()
    inv = s.Inventory()
    inv.add_item("F", "f")
    lots = []
    for step in range(150):
        on_hand = sum(q for q, _ in lots)
        if rng.random() < 0.5 or on_hand == 0:
            q, c = rng.randint(1, 30), Decimal(rng.randint(1, 50000)) / 100
            inv.receive("F", q, str(c))
            lots.append((q, c))
        elif rng.random() < 0.15:
            try:
                inv.issue("F", on_hand + rng.randint(1, 5))
                expect(False, "over-issue did not raise InsufficientStock")
            except s.InsufficientStock:
                pass
            expect(inv.level("F") == on_hand, "failed issue changed the level")
        else:
            q = rng.randint(1, on_hand)
            got = inv.issue("F", q)
            exp = fifo_model(lots, q)
            expect(got == exp, f"step {step}: issue({q}) cost {got}, FIFO cost {exp}")
        exp_value = sum((q * c for q, c in lots), Decimal(0))
        expect(inv.value("F") == exp_value, f"step {step}: value {inv.value('F')}, expected {exp_value}")


def m_exact_money():
    s = api()
    inv = s.Inventory()
    rows = [["M1", "m", "3", "0.07", ""], ["M1", "m", "1,000", "0.10", ""], ["M2", "n", "7", "19.99", ""],
            ["M3", "o", "9", "0.3", ""]]
    write_csv("/tmp/money.csv", rows)
    s.import_csv(inv, "/tmp/money.csv")
    expect(inv.value("M1") == Decimal("100.21"), f"value M1 {inv.value('M1')!r}, expected Decimal('100.21')")
    expect(inv.value("M2") == Decimal("139.93"), f"value M2 {inv.value('M2')!r}")
    cost = inv.issue("M3", 3)
    expect(cost == Decimal("0.9") and isinstance(cost, Decimal), f"issue cost {cost!r}, expected Decimal('0.9')")
    inv.add_item("M4", "p")
    inv.receive("M4", 3, Decimal("0.1"))
    inv.receive("M4", 3, "0.2")
    inv.receive("M4", 3, 2)
    expect(inv.value("M4") == Decimal("6.9"), f"value M4 {inv.value('M4')!r}")


def m_top_report():
    s = api()
    inv = s.Inventory()
    values = {}
    for i in range(40):
        sku = f"T{i:02d}"
        inv.add_item(sku, sku)
        v = rng.choice([Decimal("9.50"), Decimal("120.00"), Decimal("1000"), Decimal("99.99"),
                        Decimal(rng.randint(1, 100000)) / 100])
        inv.receive(sku, 1, v)
        values[sku] = v
    exp = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))
    for n in (1, 5, 40):
        got = s.top_value(inv, n)
        expect([(k, Decimal(v)) for k, v in got] == exp[:n], f"top_value(inv, {n}) = {got[:5]}..., expected {exp[:5]}...")


MILESTONES = [m_tags_isolated, m_import_complete, m_fresh_levels, m_fifo_cost, m_exact_money, m_top_report]
result = {}
for m in MILESTONES:
    name = m.__name__[2:]
    for mod in [k for k in sys.modules if k == "stockd" or k.startswith("stockd.")]:
        del sys.modules[mod]
    try:
        m()
        result[name] = 1
    except Exception as e:  # noqa: BLE001
        if not isinstance(e, AssertionError):
            notes.append(f"{name}: {type(e).__name__}: {e}")
        result[name] = 0
    print(f"{name}: {'PASS' if result[name] else 'FAIL'}")
for n in notes:
    print("  note:", n[:300])
result = {"reward": int(all(result.values())), **result}
os.makedirs("/logs/verifier", exist_ok=True)
with open("/logs/verifier/reward.json", "w") as f:
    json.dump(result, f)
sys.exit(0 if result["reward"] else 1)
