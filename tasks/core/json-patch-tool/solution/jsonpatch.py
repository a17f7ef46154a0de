"""RFC 6902 JSON Patch over RFC 6901 JSON Pointers."""
import copy
import json
import re
import sys

INDEX = re.compile(r"^(0|[1-9][0-9]*)$")


class PatchError(Exception):
    pass


def parse_pointer(ptr):
    if not isinstance(ptr, str):
        raise PatchError(f"pointer must be a string: {ptr!r}")
    if ptr == "":
        return []
    if not ptr.startswith("/"):
        raise PatchError(f"pointer must start with '/': {ptr!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in ptr[1:].split("/")]


def array_index(arr, tok, allow_end):
    if allow_end and tok == "-":
        return len(arr)
    if not INDEX.match(tok):
        raise PatchError(f"bad array index {tok!r}")
    i = int(tok)
    limit = len(arr) if allow_end else len(arr) - 1
    if i > limit:
        raise PatchError(f"array index {i} out of range")
    return i


def resolve(doc, tokens):
    cur = doc
    for tok in tokens:
        if isinstance(cur, dict):
            if tok not in cur:
                raise PatchError(f"no member {tok!r}")
            cur = cur[tok]
        elif isinstance(cur, list):
            cur = cur[array_index(cur, tok, False)]
        else:
            raise PatchError(f"cannot descend into a scalar at {tok!r}")
    return cur


def add(doc, tokens, value):
    if not tokens:
        return value
    parent = resolve(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(array_index(parent, last, True), value)
    else:
        raise PatchError("parent is not a container")
    return doc


def remove(doc, tokens):
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = resolve(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"no member {last!r}")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(array_index(parent, last, False))
    raise PatchError("parent is not a container")


def equal(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    return a == b


def member(op, name):
    if name not in op:
        raise PatchError(f"operation {op.get('op')!r} lacks {name!r}")
    return op[name]


def apply(doc, patch):
    if not isinstance(patch, list):
        raise PatchError("patch must be an array")
    for op in patch:
        if not isinstance(op, dict):
            raise PatchError("operation must be an object")
        kind = op.get("op")
        path = parse_pointer(member(op, "path"))
        if kind == "add":
            doc = add(doc, path, copy.deepcopy(member(op, "value")))
        elif kind == "remove":
            remove(doc, path)
        elif kind == "replace":
            value = copy.deepcopy(member(op, "value"))
            if not path:
                doc = value
            else:
                remove(doc, path)
                doc = add(doc, path, value)
        elif kind == "move":
            src = parse_pointer(member(op, "from"))
            if src == path:
                resolve(doc, src)
                continue
            if path[:len(src)] == src:
                raise PatchError("cannot move a value into one of its children")
            value = remove(doc, src) if src else doc
            doc = add(doc, path, value)
        elif kind == "copy":
            src = parse_pointer(member(op, "from"))
            doc = add(doc, path, copy.deepcopy(resolve(doc, src)))
        elif kind == "test":
            if not equal(resolve(doc, path), member(op, "value")):
                raise PatchError("test failed")
        else:
            raise PatchError(f"unknown op {kind!r}")
    return doc


def main():
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    with open(sys.argv[2]) as f:
        patch = json.load(f)
    try:
        result = apply(doc, patch)
    except PatchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
