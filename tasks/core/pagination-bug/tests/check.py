"""Checks /app/pager.py against its docstring contract on many generated cases.

The agent's module runs in a subprocess as nobody (rsr_check.call_python): it only executes the
calls listed here and returns their results; every expectation is computed and judged here."""
import random
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")

DRIVER = """
import importlib.util
spec = importlib.util.spec_from_file_location("pager", "/app/pager.py")
pager = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pager)


def one(fn, *a):
    try:
        return {"v": fn(*a)}
    except Exception as e:
        return {"e": [c.__name__ for c in type(e).__mro__]}


out = []
for name, call_args in args:
    if name == "paginate_pages":  # one item list, many pages: [total, [page, ...], per]
        total, pages, per = call_args
        items = list(range(total))
        out.append([one(pager.paginate, items, p, per) for p in pages])
    else:
        out.append(one(getattr(pager, name), *call_args))
result = out
"""
fails = []


def exp_count(total, per):
    return max(1, (total + per - 1) // per)


def exp_window(page, pages, width):
    half = width // 2
    first = page - half if width % 2 else page - half + 1
    first = max(1, min(first, pages - width + 1))
    return list(range(first, min(pages, first + width - 1) + 1))


calls = []


def call(name, *args):
    calls.append([name, list(args)])
    return len(calls) - 1


def raised(reply, kind):
    return kind in reply.get("e", [])


plan = []  # (total, per, pages, call ids...)
rng = random.Random(7)
for total in list(range(0, 40)) + [rng.randint(40, 5000) for _ in range(60)]:
    for per in [1, 2, 3, 5, 7, 10, 25, rng.randint(1, 60)]:
        pages = exp_count(total, per)
        count = call("page_count", total, per)
        chunks = call("paginate_pages", total, list(range(1, pages + 1)), per)
        bads = call("paginate_pages", total, [0, -1, pages + 1], per)
        plan.append((total, per, pages, count, chunks, bads))
zero = call("page_count", 3, 0)
windows = []
for pages in list(range(1, 15)) + [50, 101]:
    for width in range(1, 9):
        for page in range(1, pages + 1):
            windows.append((page, pages, width, call("page_window", page, pages, width)))
example = call("page_window", 5, 20, 4)

try:
    replies = rc.call_python(DRIVER, calls, timeout=120)
    if not isinstance(replies, list) or len(replies) != len(calls):
        raise RuntimeError("the driver returned no result per call")
except (rc.AgentRaised, RuntimeError, OSError) as e:
    print("FAIL /app/pager.py could not be exercised:", str(e)[:500])
    sys.exit(1)

for total, per, pages, count, chunks, bads in plan:
    got_count = replies[count].get("v")
    if got_count != exp_count(total, per):
        fails.append(f"page_count({total},{per}) = {got_count}")
        continue
    items = list(range(total))
    got = []
    for p, reply in enumerate(replies[chunks], 1):
        chunk = reply.get("v")
        if not isinstance(chunk, list):
            fails.append(f"paginate(len={total}, page={p}, per={per}) gave {reply}")
            chunk = []
        if p < pages and len(chunk) != per:
            fails.append(f"paginate(len={total}, page={p}, per={per}) has {len(chunk)} items")
        got.extend(chunk)
    if got != items:
        fails.append(f"pages of len={total} per={per} do not concatenate to the items")
    for bad, reply in zip((0, -1, pages + 1), replies[bads]):
        if not raised(reply, "PageError"):
            fails.append(f"paginate(len={total}, page={bad}, per={per}) did not raise PageError")
if not raised(replies[zero], "ValueError"):
    fails.append("page_count(3, 0) did not raise ValueError")
for page, pages, width, idx in windows:
    exp = exp_window(page, pages, width)
    got = replies[idx].get("v")
    if got != exp:
        fails.append(f"page_window({page},{pages},{width}) = {got}, expected {exp}")
if replies[example].get("v") != [4, 5, 6, 7]:
    fails.append("docstring example page_window(5, 20, 4) wrong")
for f in fails[:15]:
    print("FAIL", f)
if fails:
    print(len(fails), "failures")
    sys.exit(1)
print("PASS")
