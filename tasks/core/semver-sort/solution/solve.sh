#!/bin/bash
set -e
cat > /app/semver_sort.py <<'PY'
import re
import sys
from functools import cmp_to_key

NUM = r"0|[1-9]\d*"
PRE_ID = r"(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"
SEMVER = re.compile(
    rf"^({NUM})\.({NUM})\.({NUM})(?:-({PRE_ID}(?:\.{PRE_ID})*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


def key(m):
    return (int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4))


def cmp_pre(a, b):
    if a is None and b is None:
        return 0
    if a is None:
        return 1
    if b is None:
        return -1
    xs, ys = a.split("."), b.split(".")
    for x, y in zip(xs, ys):
        if x == y:
            continue
        xn, yn = x.isdigit(), y.isdigit()
        if xn and yn:
            return -1 if int(x) < int(y) else 1
        if xn != yn:
            return -1 if xn else 1
        return -1 if x < y else 1
    return (len(xs) > len(ys)) - (len(xs) < len(ys))


def cmp(a, b):
    ka, kb = a[0], b[0]
    if ka[:3] != kb[:3]:
        return -1 if ka[:3] < kb[:3] else 1
    return cmp_pre(ka[3], kb[3])


valid = []
for raw in sys.stdin:
    line = raw.strip()
    if not line:
        continue
    m = SEMVER.match(line)
    if m:
        valid.append((key(m), line))
    else:
        print(f"invalid: {line}", file=sys.stderr)
for _, v in sorted(valid, key=cmp_to_key(cmp)):
    print(v)
PY
