import csv


def import_csv(inv, path):
    """Import a supplier delivery file.

    Columns: sku,name,qty,unit_cost,tags. Unknown SKUs are created (name and tags from the row;
    tags separated by "|", may be empty); known SKUs get the tags added. `qty` may contain ","
    thousands separators ("1,200"); `unit_cost` is a decimal number. Returns the number of rows
    imported.
    """
    count = 0
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            try:
                qty = int(row["qty"])
            except ValueError:
                continue
            sku = row["sku"].strip()
            tags = [t for t in row["tags"].split("|") if t]
            try:
                item = inv.item(sku)
            except KeyError:
                item = inv.add_item(sku, row["name"].strip())
            for t in tags:
                item.tag(t)
            inv.receive(sku, qty, float(row["unit_cost"]))
            count += 1
    return count
