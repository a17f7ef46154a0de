"""A tiny to-do list manager.

usage: python3 todo.py [--db FILE] add TITLE [--due YYYY-MM-DD] [--tag TAG ...]
       python3 todo.py [--db FILE] done ID
       python3 todo.py [--db FILE] list [--all]
"""
import argparse
import datetime as dt
import json
import os
import sys

DEFAULT_DB = os.path.expanduser("~/.todo.json")


class Store:
    """Items live in one JSON file: {"next_id": int, "items": [{id, title, due, tags, done}]}."""

    def __init__(self, path):
        self.path = path
        if os.path.exists(path):
            with open(path) as f:
                self.data = json.load(f)
        else:
            self.data = {"next_id": 1, "items": []}

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f, indent=2)
        os.replace(tmp, self.path)

    def add(self, title, due=None, tags=()):
        item = {"id": self.data["next_id"], "title": title, "due": due, "tags": sorted(set(tags)),
                "done": False}
        self.data["next_id"] += 1
        self.data["items"].append(item)
        return item

    def get(self, item_id):
        for item in self.data["items"]:
            if item["id"] == item_id:
                return item
        raise KeyError(item_id)

    def items(self, include_done=False):
        return [i for i in self.data["items"] if include_done or not i["done"]]


def parse_date(text):
    return dt.date.fromisoformat(text).isoformat()


def build_parser():
    p = argparse.ArgumentParser(prog="todo")
    p.add_argument("--db", default=DEFAULT_DB)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("add")
    a.add_argument("title")
    a.add_argument("--due", type=parse_date)
    a.add_argument("--tag", action="append", default=[])
    d = sub.add_parser("done")
    d.add_argument("id", type=int)
    lst = sub.add_parser("list")
    lst.add_argument("--all", action="store_true")
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    store = Store(args.db)
    if args.cmd == "add":
        item = store.add(args.title, args.due, args.tag)
        store.save()
        print(item["id"])
    elif args.cmd == "done":
        try:
            store.get(args.id)["done"] = True
        except KeyError:
            print(f"no item {args.id}", file=sys.stderr)
            return 1
        store.save()
    elif args.cmd == "list":
        for item in store.items(args.all):
            mark = "x" if item["done"] else " "
            due = f" (due {item['due']})" if item["due"] else ""
            tags = "".join(f" #{t}" for t in item["tags"])
            print(f"[{mark}] {item['id']}: {item['title']}{due}{tags}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
