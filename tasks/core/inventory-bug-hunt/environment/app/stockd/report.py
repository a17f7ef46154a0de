def top_value(inv, n):
    """The n SKUs with the highest stock value: [(sku, value)], value descending, ties by sku."""
    rows = [(sku, inv.value(sku)) for sku in inv.skus()]
    rows.sort(key=lambda r: (str(r[1]), r[0]), reverse=True)
    return rows[:n]
