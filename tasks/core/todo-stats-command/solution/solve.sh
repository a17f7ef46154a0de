#!/bin/bash
set -e
cd /app
python3 - <<'PY'
src = open("todo.py").read()
src = src.replace('''    lst.add_argument("--all", action="store_true")
    return p''', '''    lst.add_argument("--all", action="store_true")
    st = sub.add_parser("stats")
    st.add_argument("--today", type=parse_date)
    return p


def stats(store, today):
    """Counts for the stats subcommand; `today` is an ISO date string."""
    items = store.items(include_done=True)
    open_items = [i for i in items if not i["done"]]
    by_tag = {}
    for item in open_items:
        for tag in item["tags"]:
            by_tag[tag] = by_tag.get(tag, 0) + 1
    return {
        "total": len(items),
        "done": len(items) - len(open_items),
        "open": len(open_items),
        "overdue": sum(1 for i in open_items if i["due"] and i["due"] < today),
        "due_today": sum(1 for i in open_items if i["due"] == today),
        "by_tag": dict(sorted(by_tag.items())),
    }''')
src = src.replace('''    return 0


if __name__''', '''    elif args.cmd == "stats":
        today = args.today or dt.date.today().isoformat()
        print(json.dumps(stats(store, today)))
    return 0


if __name__''')
open("todo.py", "w").write(src)
PY
cat > tests/test_stats.py <<'PY'
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout
from io import StringIO

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import todo  # noqa: E402


class StatsTest(unittest.TestCase):
    def test_stats_counts_overdue_open_items_only(self):
        db = os.path.join(tempfile.mkdtemp(), "db.json")
        todo.main(["--db", db, "add", "a", "--due", "2024-01-01", "--tag", "w"])
        todo.main(["--db", db, "add", "b", "--due", "2024-01-01"])
        todo.main(["--db", db, "done", "2"])
        out = StringIO()
        with redirect_stdout(out):
            todo.main(["--db", db, "stats", "--today", "2024-02-01"])
        s = json.loads(out.getvalue())
        self.assertEqual((s["overdue"], s["done"], s["by_tag"]), (1, 1, {"w": 1}))
PY
python3 -m unittest discover -s tests -q
