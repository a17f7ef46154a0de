#!/bin/bash
set -e
cd /app/stockd
python3 - <<'PY'
def sub(path, old, new):
    src = open(path).read()
    assert old in src, (path, old)
    open(path, "w").write(src.replace(old, new))

# 1. Shared mutable default argument: every tag-less item shared one list.
sub("models.py", '''    def __init__(self, sku, name, tags=[]):
        self.sku = sku
        self.name = name
        self.tags = tags
        for t in list(tags):
            if tags.count(t) > 1:
                tags.remove(t)''', '''    def __init__(self, sku, name, tags=None):
        self.sku = sku
        self.name = name
        self.tags = []
        for t in tags or ():
            self.tag(t)''')
# 2. Thousands separators made int() fail and the row was silently skipped.
# 5. float costs lost exactness before reaching Decimal.
sub("importer.py", 'qty = int(row["qty"])', 'qty = int(row["qty"].replace(",", "").strip())')
sub("importer.py", 'float(row["unit_cost"])', 'row["unit_cost"].strip()')
sub("lots.py", "return value if isinstance(value, Decimal) else Decimal(value)",
    "if isinstance(value, Decimal):\n        return value\n    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)")
# 3. lru_cache on a method returns stale levels (and keeps inventories alive).
sub("inventory.py", "    @functools.lru_cache(maxsize=1024)\n", "")
sub("inventory.py", "import functools\n\n", "")
# 4. Sorting lots by cost broke FIFO order.
sub("lots.py", '''        self.lots.append(Lot(qty, to_money(unit_cost)))
        # Keep the list tidy so issue() can walk it from the front.
        self.lots.sort(key=lambda lot: lot.unit_cost)''', '''        self.lots.append(Lot(qty, to_money(unit_cost)))''')
# 6. Values were compared as strings.
sub("report.py", "rows.sort(key=lambda r: (str(r[1]), r[0]), reverse=True)", "rows.sort(key=lambda r: (-r[1], r[0]))")
PY
