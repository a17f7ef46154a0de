from pager import paginate, page_count, page_window

items = [f"item{i}" for i in range(1, 24)]
n = page_count(len(items), 5)
for p in range(1, n + 1):
    print(p, paginate(items, p, 5), page_window(p, n, 3))
