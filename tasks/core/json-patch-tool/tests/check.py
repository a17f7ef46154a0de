"""RFC 6902 examples with hand-written answers, then differential testing of random patches
against a reference implementation."""
import json
import os
import random
import sys

sys.path.insert(0, "/tests")
import ref_jsonpatch as ref  # noqa: E402
import rsr_check as rc  # noqa: E402

# The reference stays in /tests (root-only after lockdown) and in this process; the tool runs as
# nobody on inputs in its own directory.
rc.lockdown()
rc.expose("/app")
WORK = rc.scratch("jp-")
fails = []


def run(doc, patch):
    for p in (f"{WORK}/doc.json", f"{WORK}/patch.json"):
        if os.path.lexists(p):
            os.unlink(p)
    before = json.dumps(doc)
    rc.put(f"{WORK}/doc.json", before)
    rc.put(f"{WORK}/patch.json", json.dumps(patch))
    r = rc.run(["python3", "/app/jsonpatch.py", f"{WORK}/doc.json", f"{WORK}/patch.json"], timeout=20)
    try:
        after = rc.read_text(f"{WORK}/doc.json")
    except OSError:
        after = None
    if after != before:
        fails.append("input document file was modified")
    return r


def check(name, doc, patch, expect, error=False):
    r = run(doc, patch)
    if error:
        if r.returncode != 1 or r.stdout.strip() or not r.stderr.lstrip().startswith("error:"):
            fails.append(f"{name}: expected an error (exit 1, empty stdout, 'error:'), got rc={r.returncode} out={r.stdout[:120]!r}")
        return
    try:
        got = json.loads(r.stdout)
    except json.JSONDecodeError:
        fails.append(f"{name}: no JSON on stdout (rc={r.returncode}, stderr={r.stderr[-200:]!r})")
        return
    if r.returncode != 0 or not ref.equal(got, expect):
        fails.append(f"{name}: got {json.dumps(got)[:200]}, expected {json.dumps(expect)[:200]}")


E = True
check("A.1 add member", {"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}], {"baz": "qux", "foo": "bar"})
check("A.2 add array", {"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/1", "value": "qux"}], {"foo": ["bar", "qux", "baz"]})
check("A.3 remove", {"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"})
check("A.4 remove elem", {"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}], {"foo": ["bar", "baz"]})
check("A.5 replace", {"baz": "qux", "foo": "bar"}, [{"op": "replace", "path": "/baz", "value": "boo"}], {"baz": "boo", "foo": "bar"})
check("A.6 move", {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
      [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
      {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}})
check("A.7 move elem", {"foo": ["all", "grass", "cows", "eat"]}, [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
      {"foo": ["all", "cows", "eat", "grass"]})
check("A.8 test ok", {"baz": "qux", "foo": ["a", 2, "c"]},
      [{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}],
      {"baz": "qux", "foo": ["a", 2, "c"]})
check("A.9 test fail", {"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}], None, E)
check("A.10 add nested", {"foo": "bar"}, [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
      {"foo": "bar", "child": {"grandchild": {}}})
check("A.11 extra members", {"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}], {"foo": "bar", "baz": "qux"})
check("A.12 missing target", {"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}], None, E)
check("A.14 escapes", {"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10})
check("A.15 type mismatch", {"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}], None, E)
check("A.16 append", {"foo": ["bar"]}, [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}], {"foo": ["bar", ["abc", "def"]]})
check("root replace", {"a": 1}, [{"op": "replace", "path": "", "value": [1, 2]}], [1, 2])
check("root add", [1], [{"op": "add", "path": "", "value": {"x": None}}], {"x": None})
check("root remove", {"a": 1}, [{"op": "remove", "path": ""}], None, E)
check("atomic", {"a": 1}, [{"op": "add", "path": "/b", "value": 2}, {"op": "remove", "path": "/zz"}], None, E)
check("leading zero", {"a": [1, 2]}, [{"op": "remove", "path": "/a/01"}], None, E)
check("index past end", {"a": [1, 2]}, [{"op": "add", "path": "/a/3", "value": 0}], None, E)
check("index at end", {"a": [1, 2]}, [{"op": "add", "path": "/a/2", "value": 0}], {"a": [1, 2, 0]})
check("dash replace", {"a": [1, 2]}, [{"op": "replace", "path": "/a/-", "value": 0}], None, E)
check("no slash", {"a": 1}, [{"op": "remove", "path": "a"}], None, E)
check("unknown op", {"a": 1}, [{"op": "merge", "path": "/a", "value": 1}], None, E)
check("missing value", {"a": 1}, [{"op": "add", "path": "/b"}], None, E)
check("missing from", {"a": 1}, [{"op": "copy", "path": "/b"}], None, E)
check("move into child", {"a": {"b": {}}}, [{"op": "move", "from": "/a", "path": "/a/b/c"}], None, E)
check("move to self", {"a": {"b": 1}}, [{"op": "move", "from": "/a", "path": "/a"}], {"a": {"b": 1}})
check("move prefix sibling", {"a": 1, "ab": 2}, [{"op": "move", "from": "/a", "path": "/ab"}], {"ab": 1})
check("copy deep", {"a": {"x": [1]}}, [{"op": "copy", "from": "/a", "path": "/b"}, {"op": "add", "path": "/b/x/-", "value": 2}],
      {"a": {"x": [1]}, "b": {"x": [1, 2]}})
check("bool vs int", {"a": True}, [{"op": "test", "path": "/a", "value": 1}], None, E)
check("int vs float", {"a": 1}, [{"op": "test", "path": "/a", "value": 1.0}], {"a": 1})
check("object order", {"a": {"x": 1, "y": [1, {"z": None}]}}, [{"op": "test", "path": "/a", "value": {"y": [1, {"z": None}], "x": 1}}],
      {"a": {"x": 1, "y": [1, {"z": None}]}})
check("scalar parent", {"a": 5}, [{"op": "add", "path": "/a/b", "value": 1}], None, E)
check("empty key", {"": 1}, [{"op": "replace", "path": "/", "value": 2}], {"": 2})

# Differential testing on random documents and patches.
rng = random.Random(6902)
KEYS = ["a", "b", "c~d", "e/f", "~1", "", "0", "10"]


def rand_value(depth):
    r = rng.random()
    if depth > 2 or r < 0.35:
        return rng.choice([0, 1, 1.0, 2.5, -3, True, False, None, "s", "t", ""])
    if r < 0.65:
        return {k: rand_value(depth + 1) for k in rng.sample(KEYS, rng.randint(0, 4))}
    return [rand_value(depth + 1) for _ in range(rng.randint(0, 4))]


def pointers(doc, prefix=""):
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += pointers(v, prefix + "/" + k.replace("~", "~0").replace("/", "~1"))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += pointers(v, f"{prefix}/{i}")
    return out


def rand_path(doc):
    p = rng.choice(pointers(doc))
    r = rng.random()
    if r < 0.25:
        p += "/" + rng.choice(KEYS + ["-", "0", "1", "3", "01"]).replace("~", "~0").replace("/", "~1")
    elif r < 0.3:
        p += "/zz/q"
    return p


for case in range(90):
    doc = {k: rand_value(0) for k in rng.sample(KEYS, rng.randint(1, 5))}
    patch = []
    for _ in range(rng.randint(1, 5)):
        kind = rng.choice(["add", "add", "remove", "replace", "move", "copy", "test"])
        op = {"op": kind, "path": rand_path(doc)}
        if kind in ("add", "replace"):
            op["value"] = rand_value(1)
        if kind in ("move", "copy"):
            op["from"] = rand_path(doc)
        if kind == "test":
            try:
                op["value"] = ref.resolve(doc, ref.parse_pointer(op["path"])) if rng.random() < 0.7 else rand_value(1)
            except ref.PatchError:
                op["value"] = 1
        patch.append(op)
    try:
        exp = ref.apply(json.loads(json.dumps(doc)), json.loads(json.dumps(patch)))
        check(f"random {case}", doc, patch, exp)
    except ref.PatchError:
        check(f"random {case}", doc, patch, None, E)

for f in fails[:15]:
    print("FAIL", f)
print(f"{len(fails)} failures")
sys.exit(1 if fails else 0)
