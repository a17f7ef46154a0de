#!/bin/bash
set -e
cat > /app/summarize <<'PY'
#!/usr/bin/env python3
import csv
import json
import sys
from decimal import Decimal

agg = {}
with open(sys.argv[1], newline="") as f:
    for r in csv.DictReader(f):
        d = agg.setdefault(r["region"], {"orders": 0, "units": 0, "revenue": Decimal(0), "per": {}})
        q = int(r["quantity"])
        d["orders"] += 1
        d["units"] += q
        d["revenue"] += q * Decimal(r["unit_price"])  # Decimal: no float drift before rounding
        d["per"][r["product"]] = d["per"].get(r["product"], 0) + q
out = {
    reg: {
        "orders": d["orders"],
        "units": d["units"],
        "revenue": float(round(d["revenue"], 2)),
        "top_product": min(d["per"].items(), key=lambda kv: (-kv[1], kv[0]))[0],
    }
    for reg, d in agg.items()
}
with open(sys.argv[2], "w") as f:
    json.dump(out, f, indent=2)
PY
chmod +x /app/summarize
