"""Sum the amount column of a CSV per region; write the totals as a JSON object."""

import csv
import json
import sys
from decimal import Decimal

source, target = sys.argv[1], sys.argv[2]
totals: dict[str, Decimal] = {}
with open(source, newline="") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] = totals.get(row["region"], Decimal(0)) + Decimal(row["amount"])
with open(target, "w") as f:
    json.dump({k: float(round(v, 2)) for k, v in sorted(totals.items())}, f, indent=2)
    f.write("\n")
