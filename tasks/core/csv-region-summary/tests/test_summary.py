import csv
import json
import os
import random
import sys
from decimal import Decimal

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")

PRODUCTS = ["Widget", "Widget, large", 'Cable "USB-C"', "Gadget", "Bolt, hex, M6", "Zebra tape", "anchor"]
REGIONS = ["north", "south", "east", "west", "central"]


def reference(rows):
    out = {}
    for r in rows:
        d = out.setdefault(r["region"], {"orders": 0, "units": 0, "revenue": Decimal(0), "per": {}})
        q = int(r["quantity"])
        d["orders"] += 1
        d["units"] += q
        d["revenue"] += q * Decimal(r["unit_price"])
        d["per"][r["product"]] = d["per"].get(r["product"], 0) + q
    res = {}
    for reg, d in out.items():
        top = sorted(d["per"].items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        res[reg] = {"orders": d["orders"], "units": d["units"], "revenue": float(round(d["revenue"], 2)), "top_product": top}
    return res


def main() -> int:
    if not os.access("/app/summarize", os.X_OK):
        print("FAIL: /app/summarize missing or not executable")
        return 1
    bad = 0
    for seed in range(5):
        rng = random.Random(seed * 7 + 3)
        regions = rng.sample(REGIONS, rng.randint(2, 5))
        rows = []
        for i in range(rng.randint(20, 400)):
            rows.append({"order_id": str(5000 + i), "region": rng.choice(regions), "product": rng.choice(PRODUCTS),
                         "quantity": str(rng.randint(1, 40)), "unit_price": f"{rng.randint(1, 99999) / 100:.2f}"})
        d = rc.scratch()  # input and output: the deliverable's; the expected values stay in memory
        inp, outp = os.path.join(d, "in.csv"), os.path.join(d, "out.json")
        with open(inp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        rc.hand_over(inp)
        r = rc.run(["/app/summarize", inp, outp], timeout=30)
        want = reference(rows)
        try:
            got = json.loads(rc.read_text(outp))
        except (OSError, ValueError) as e:
            print(f"FAIL seed {seed}: no valid JSON output ({e}); rc={r.returncode} {r.stderr[-300:]}")
            bad += 1
            continue
        if r.returncode != 0:
            print(f"FAIL seed {seed}: exit status {r.returncode}")
            bad += 1
        if not isinstance(got, dict) or set(got) != set(want):
            print(f"FAIL seed {seed}: regions {sorted(got) if isinstance(got, dict) else got} != {sorted(want)}")
            bad += 1
            continue
        for reg, w in want.items():
            g = got[reg]
            ok = (isinstance(g, dict) and set(g) == set(w) and g["orders"] == w["orders"] and g["units"] == w["units"]
                  and isinstance(g["revenue"], (int, float)) and abs(g["revenue"] - w["revenue"]) < 0.005
                  and g["top_product"] == w["top_product"])
            if not ok:
                print(f"FAIL seed {seed} region {reg}: got {g} want {w}")
                bad += 1
    if bad:
        return 1
    print("PASS: all summaries match")
    return 0


sys.exit(main())
