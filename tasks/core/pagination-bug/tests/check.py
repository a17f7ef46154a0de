"""Checks /app/pager.py against its docstring contract on many generated cases."""
import importlib.util
import random
import sys

spec = importlib.util.spec_from_file_location("pager", "/app/pager.py")
pager = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pager)
fails = []


def exp_count(total, per):
    return max(1, (total + per - 1) // per)


def exp_window(page, pages, width):
    half = width // 2
    first = page - half if width % 2 else page - half + 1
    first = max(1, min(first, pages - width + 1))
    return list(range(first, min(pages, first + width - 1) + 1))


rng = random.Random(7)
for total in list(range(0, 40)) + [rng.randint(40, 5000) for _ in range(60)]:
    for per in [1, 2, 3, 5, 7, 10, 25, rng.randint(1, 60)]:
        if pager.page_count(total, per) != exp_count(total, per):
            fails.append(f"page_count({total},{per}) = {pager.page_count(total, per)}")
            continue
        items = list(range(total))
        pages = exp_count(total, per)
        got = []
        for p in range(1, pages + 1):
            chunk = pager.paginate(items, p, per)
            if p < pages and len(chunk) != per:
                fails.append(f"paginate(len={total}, page={p}, per={per}) has {len(chunk)} items")
            got.extend(chunk)
        if got != items:
            fails.append(f"pages of len={total} per={per} do not concatenate to the items")
        for bad in (0, -1, pages + 1):
            try:
                pager.paginate(items, bad, per)
                fails.append(f"paginate(len={total}, page={bad}, per={per}) did not raise PageError")
            except pager.PageError:
                pass
try:
    pager.page_count(3, 0)
    fails.append("page_count(3, 0) did not raise ValueError")
except ValueError:
    pass
for pages in list(range(1, 15)) + [50, 101]:
    for width in range(1, 9):
        for page in range(1, pages + 1):
            exp = exp_window(page, pages, width)
            got = pager.page_window(page, pages, width)
            if got != exp:
                fails.append(f"page_window({page},{pages},{width}) = {got}, expected {exp}")
if pager.page_window(5, 20, 4) != [4, 5, 6, 7]:
    fails.append("docstring example page_window(5, 20, 4) wrong")
for f in fails[:15]:
    print("FAIL", f)
if fails:
    print(len(fails), "failures")
    sys.exit(1)
print("PASS")
