"""One milestone per bug report; every check drives the public API with generated scenarios.

The agent's package never enters this process: each milestone is a list of API calls that a
fresh `python3 -I` as nobody executes against /app/stockd (rsr_check.call_python), returning
every result; the scenario, the model and every judgement stay here."""
import csv
import io
import json
import random
import sys
from decimal import Decimal

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")
WORK = rc.scratch("inv-")
rng = random.Random(5150)
notes = []

# Runs a list of operations against the agent's package. Values cross as JSON: Decimals as
# {"$dec": str}, objects kept in named variables ({"$var": name}) and reported by type name.
DRIVER = r'''
import importlib
from decimal import Decimal
s = importlib.import_module("stockd")
env = {"s": s}

def dec(v):
    if isinstance(v, dict) and "$dec" in v:
        return Decimal(v["$dec"])
    if isinstance(v, dict) and "$var" in v:
        return env[v["$var"]]
    if isinstance(v, list):
        return [dec(x) for x in v]
    return v

def enc(v):
    if isinstance(v, Decimal):
        return {"$dec": str(v)}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [enc(x) for x in v]
    return {"$obj": type(v).__name__}

out = []
for kind, var, target, name, call_args, kwargs in args:
    try:
        obj = env[target]
        if kind == "attr":
            v = getattr(obj, name)
        else:
            v = getattr(obj, name)(*dec(call_args), **{k: dec(x) for k, x in kwargs.items()})
        if var:
            env[var] = v
        out.append({"v": enc(v)})
    except Exception as e:
        out.append({"e": [c.__name__ for c in type(e).__mro__], "m": str(e)[:200]})
result = out
'''


class Trace:
    """A milestone's calls, then its expectations over their results, judged in order."""

    def __init__(self):
        self.ops, self.checks = [], []

    def call(self, target, name, *args, var=None, **kwargs):
        self.ops.append(["call", var, target, name, [enc(a) for a in args], {k: enc(v) for k, v in kwargs.items()}])
        return len(self.ops) - 1

    def attr(self, target, name):
        self.ops.append(["attr", None, target, name, [], {}])
        return len(self.ops) - 1

    def expect(self, test, msg):
        self.checks.append((test, msg))

    def judge(self):
        try:
            replies = rc.call_python(DRIVER, self.ops, paths=["/app"], timeout=120)
        except (rc.AgentRaised, RuntimeError) as e:
            raise AssertionError(f"stockd could not be exercised: {str(e)[:300]}") from None
        if not isinstance(replies, list) or len(replies) != len(self.ops):
            raise AssertionError("the driver did not answer every call")
        for test, msg in self.checks:
            ok = test(replies)
            if not ok:
                text = msg(replies) if callable(msg) else msg
                notes.append(text)
                raise AssertionError(text)


def enc(v):
    if isinstance(v, Decimal):
        return {"$dec": str(v)}
    if isinstance(v, Var):
        return {"$var": v.name}
    if isinstance(v, (list, tuple)):
        return [enc(x) for x in v]
    return v


class Var:
    def __init__(self, name):
        self.name = name


def val(reply):
    """A reply's value with Decimals restored (None for a raised call)."""
    def dec(v):
        if isinstance(v, dict) and "$dec" in v:
            return Decimal(v["$dec"])
        if isinstance(v, list):
            return [dec(x) for x in v]
        return v
    return dec(reply["v"]) if "v" in reply else None


def raised(reply, kind):
    return kind in reply.get("e", [])


def write_csv(path, rows):
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["sku", "name", "qty", "unit_cost", "tags"])
    w.writerows(rows)
    rc.put(path, buf.getvalue())


def m_tags_isolated():
    t = Trace()
    t.call("s", "Inventory", var="inv")
    for name, kw in (("A", {}), ("B", {}), ("C", {"tags": ["x", "x", "y"]})):
        t.call("inv", "add_item", name, name.lower(), var=name.lower(), **kw)
    t.call("a", "tag", "fragile")
    t.call("a", "tag", "fragile")
    t.call("inv", "add_item", "D", "d", var="d")
    ta, tb, td, tc = t.attr("a", "tags"), t.attr("b", "tags"), t.attr("d", "tags"), t.attr("c", "tags")
    t.call("s", "Inventory", var="inv2")
    t.call("inv2", "add_item", "E", "e", var="e")
    te = t.attr("e", "tags")
    t.expect(lambda r: val(r[ta]) == ["fragile"], lambda r: f"a.tags = {val(r[ta])}")
    t.expect(lambda r: val(r[tb]) == [] and val(r[td]) == [], lambda r: f"untagged items got tags: {val(r[tb])} {val(r[td])}")
    t.expect(lambda r: val(r[tc]) == ["x", "y"], lambda r: f"c.tags = {val(r[tc])}")
    t.expect(lambda r: val(r[te]) == [], lambda r: f"item in a new inventory starts with tags {val(r[te])}")
    t.judge()


def m_import_complete():
    t = Trace()
    t.call("s", "Inventory", var="inv")
    rows, qty = [], {}
    for i in range(60):
        sku = f"S{rng.randrange(15):02d}"
        q = rng.choice([1, 7, 999, 1000, 1200, 25000, 1234567])
        shown = f"{q:,}" if rng.random() < 0.5 else str(q)
        rows.append([sku, f"Thing, model {sku}", shown, f"{rng.randint(1, 9999) / 100:.2f}",
                     "|".join(rng.sample(["a", "b", "c"], rng.randint(0, 2)))])
        qty[sku] = qty.get(sku, 0) + q
    write_csv(f"{WORK}/imp.csv", rows)
    n = t.call("s", "import_csv", Var("inv"), f"{WORK}/imp.csv")
    t.expect(lambda r: val(r[n]) == 60, lambda r: f"import_csv returned {val(r[n])}, expected 60")
    for sku, q in qty.items():
        lv = t.call("inv", "level", sku)
        t.expect(lambda r, lv=lv, q=q: val(r[lv]) == q, lambda r, lv=lv, q=q, sku=sku: f"{sku}: level {val(r[lv])}, expected {q}")
    t.call("inv", "item", rows[0][0], var="first")
    nm = t.attr("first", "name")
    t.expect(lambda r: val(r[nm]) == rows[0][1], "name with a comma not imported")
    t.judge()


def m_fresh_levels():
    t = Trace()
    t.call("s", "Inventory", var="inv")
    t.call("inv", "add_item", "L", "l")
    model = 0
    for step in range(200):
        if rng.random() < 0.55 or model == 0:
            q = rng.randint(1, 20)
            t.call("inv", "receive", "L", q, "1.00")
            model += q
        else:
            q = rng.randint(1, model)
            t.call("inv", "issue", "L", q)
            model -= q
        lv = t.call("inv", "level", "L")
        t.expect(lambda r, lv=lv, m=model: val(r[lv]) == m,
                 lambda r, lv=lv, m=model, step=step: f"step {step}: level {val(r[lv])}, expected {m}")
    t.judge()


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
    t = Trace()
    t.call("s", "Inventory", var="inv")
    t.call("inv", "add_item", "F", "f")
    lots = []
    for step in range(150):
        on_hand = sum(q for q, _ in lots)
        if rng.random() < 0.5 or on_hand == 0:
            q, c = rng.randint(1, 30), Decimal(rng.randint(1, 50000)) / 100
            t.call("inv", "receive", "F", q, str(c))
            lots.append((q, c))
        elif rng.random() < 0.15:
            bad = t.call("inv", "issue", "F", on_hand + rng.randint(1, 5))
            t.expect(lambda r, bad=bad: raised(r[bad], "InsufficientStock"), "over-issue did not raise InsufficientStock")
            lv = t.call("inv", "level", "F")
            t.expect(lambda r, lv=lv, h=on_hand: val(r[lv]) == h, "failed issue changed the level")
        else:
            q = rng.randint(1, on_hand)
            got = t.call("inv", "issue", "F", q)
            exp = fifo_model(lots, q)
            t.expect(lambda r, got=got, exp=exp: "v" in r[got] and val(r[got]) == exp,
                     lambda r, got=got, exp=exp, q=q, step=step: f"step {step}: issue({q}) cost {val(r[got])}, FIFO cost {exp}")
        exp_value = sum((q * c for q, c in lots), Decimal(0))
        v = t.call("inv", "value", "F")
        t.expect(lambda r, v=v, e=exp_value: "v" in r[v] and val(r[v]) == e,
                 lambda r, v=v, e=exp_value, step=step: f"step {step}: value {val(r[v])}, expected {e}")
    t.judge()


def is_dec(reply):
    return isinstance(reply.get("v"), dict) and "$dec" in reply["v"]


def m_exact_money():
    t = Trace()
    t.call("s", "Inventory", var="inv")
    rows = [["M1", "m", "3", "0.07", ""], ["M1", "m", "1,000", "0.10", ""], ["M2", "n", "7", "19.99", ""],
            ["M3", "o", "9", "0.3", ""]]
    write_csv(f"{WORK}/money.csv", rows)
    t.call("s", "import_csv", Var("inv"), f"{WORK}/money.csv")
    v1, v2 = t.call("inv", "value", "M1"), t.call("inv", "value", "M2")
    cost = t.call("inv", "issue", "M3", 3)
    t.call("inv", "add_item", "M4", "p")
    t.call("inv", "receive", "M4", 3, Decimal("0.1"))
    t.call("inv", "receive", "M4", 3, "0.2")
    t.call("inv", "receive", "M4", 3, 2)
    v4 = t.call("inv", "value", "M4")
    t.expect(lambda r: val(r[v1]) == Decimal("100.21"),
             lambda r: f"value M1 {r[v1]}, expected Decimal('100.21')")
    t.expect(lambda r: val(r[v2]) == Decimal("139.93"), lambda r: f"value M2 {r[v2]}")
    t.expect(lambda r: is_dec(r[cost]) and val(r[cost]) == Decimal("0.9"),
             lambda r: f"issue cost {r[cost]}, expected Decimal('0.9')")
    t.expect(lambda r: val(r[v4]) == Decimal("6.9"), lambda r: f"value M4 {r[v4]}")
    t.judge()


def m_top_report():
    t = Trace()
    t.call("s", "Inventory", var="inv")
    values = {}
    for i in range(40):
        sku = f"T{i:02d}"
        t.call("inv", "add_item", sku, sku)
        v = rng.choice([Decimal("9.50"), Decimal("120.00"), Decimal("1000"), Decimal("99.99"),
                        Decimal(rng.randint(1, 100000)) / 100])
        t.call("inv", "receive", sku, 1, v)
        values[sku] = v
    exp = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))

    def pairs(reply):
        got = val(reply)
        try:
            return [(k, Decimal(v)) for k, v in got]
        except (TypeError, ValueError, ArithmeticError):
            return None

    for n in (1, 5, 40):
        top = t.call("s", "top_value", Var("inv"), n)
        t.expect(lambda r, top=top, n=n: pairs(r[top]) == exp[:n],
                 lambda r, top=top, n=n: f"top_value(inv, {n}) = {str(val(r[top]))[:200]}..., expected {exp[:5]}...")
    t.judge()


MILESTONES = [m_tags_isolated, m_import_complete, m_fresh_levels, m_fifo_cost, m_exact_money, m_top_report]
result = {}
for m in MILESTONES:
    name = m.__name__[2:]
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
reward = int(all(result.values()))
rc.write_reward(reward, result)
print(json.dumps({"reward": reward, **result}))
sys.exit(0 if reward else 1)
