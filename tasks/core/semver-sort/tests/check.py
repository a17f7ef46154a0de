"""Checks /app/semver_sort.py against an independent reference on fixed and generated cases."""
import random
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")

FAILS = []


def valid_num(s):
    return s.isdigit() and s.isascii() and (s == "0" or s[0] != "0")


def ident_ok(s):
    return s != "" and all(c.isascii() and (c.isalnum() or c == "-") for c in s)


def parse(v):
    """Returns (major, minor, patch, [pre ids] | None) or None when invalid."""
    core, plus, build = v.partition("+")
    if plus and not all(ident_ok(p) for p in build.split(".")):
        return None
    core, dash, pre = core.partition("-")
    parts = core.split(".")
    if len(parts) != 3 or not all(valid_num(p) for p in parts):
        return None
    pres = None
    if dash:
        pres = pre.split(".")
        for p in pres:
            if not ident_ok(p):
                return None
            if p.isdigit() and not valid_num(p):
                return None
    return tuple(int(p) for p in parts), pres


def sort_key(parsed):
    nums, pres = parsed
    if pres is None:
        return (nums, 1, ())
    ids = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pres)
    return (nums, 0, ids)


def expected(lines):
    valid, invalid = [], []
    for raw in lines:
        s = raw.strip()
        if not s:
            continue
        p = parse(s)
        if p is None:
            invalid.append(s)
        else:
            valid.append((sort_key(p), s))
    valid.sort(key=lambda t: t[0])  # stable
    return [s for _, s in valid], invalid


def run_case(name, lines):
    data = "".join(l + "\n" for l in lines)
    try:
        r = rc.run(["python3", "/app/semver_sort.py"], input=data, timeout=30)
    except Exception as e:  # noqa: BLE001
        FAILS.append(f"{name}: could not run: {e}")
        return
    exp_out, exp_err = expected(lines)
    out = [l for l in r.stdout.splitlines()]
    err = [l for l in r.stderr.splitlines() if l.startswith("invalid: ")]
    if r.returncode != 0:
        FAILS.append(f"{name}: exit status {r.returncode}")
    if out != exp_out:
        FAILS.append(f"{name}: stdout mismatch\n  expected {exp_out[:12]}...\n  got      {out[:12]}...")
    if err != ["invalid: " + s for s in exp_err]:
        FAILS.append(f"{name}: stderr invalid lines mismatch: expected {exp_err[:8]} got {err[:8]}")


spec = ["1.0.0", "1.0.0-rc.1", "1.0.0-beta.11", "1.0.0-beta.2", "1.0.0-beta", "1.0.0-alpha.beta",
        "1.0.0-alpha.1", "1.0.0-alpha"]
run_case("spec-example", spec)
run_case("core-numbers", ["2.1.1", "2.1.0", "2.0.0", "10.0.0", "1.10.0", "1.9.0", "1.0.0"])
run_case("invalid-forms", ["01.0.0", "1.0", "v1.0.0", "1.0.0-", "1.0.0+", "1.0.0-01", "1.0.0-a..b",
                           "1.0.0-alpha_1", "1.2.3.4", "1.0.0-0A", "1.0.0-00", " 3.0.0 ", "",
                           "1.0.0+build.01", "1.0.0-x+y+z", "-1.0.0", "1.0.0-0"])
run_case("build-metadata-stable", ["1.0.0+b", "1.0.0-rc.1+x", "1.0.0+a", "1.0.0", "1.0.0-rc.1"])
run_case("huge-numbers", ["99999999999999999999.0.0", "9999999999999999999.0.0", "1.0.0-999999999999999999999",
                          "1.0.0-1000000000000000000000", "1.0.0-alpha"])
run_case("numeric-vs-alpha", ["1.0.0-1", "1.0.0-a", "1.0.0-1.a", "1.0.0-1.1", "1.0.0--", "1.0.0-A",
                              "1.0.0-Z.1", "1.0.0-z", "1.0.0-10", "1.0.0-9"])

rng = random.Random(20241130)
ALNUM = "abcxyzABZ-019"
for case in range(40):
    lines = []
    for _ in range(rng.randint(20, 120)):
        nums = [str(rng.choice([0, 1, 2, 3, 10, 11, rng.randint(0, 300)])) for _ in range(3)]
        if rng.random() < 0.08:
            nums[rng.randrange(3)] = "0" + str(rng.randint(0, 9))
        v = ".".join(nums if rng.random() > 0.03 else nums[:2])
        if rng.random() < 0.6:
            ids = []
            for _ in range(rng.randint(1, 3)):
                if rng.random() < 0.5:
                    ids.append(str(rng.choice([0, 1, 2, 11, rng.randint(0, 99)])))
                else:
                    ids.append("".join(rng.choice(ALNUM) for _ in range(rng.randint(1, 4))))
            if rng.random() < 0.03:
                ids.append("")
            v += "-" + ".".join(ids)
        if rng.random() < 0.3:
            v += "+" + ".".join("".join(rng.choice(ALNUM) for _ in range(rng.randint(1, 3)))
                                for _ in range(rng.randint(1, 2)))
        if rng.random() < 0.03:
            v = "v" + v
        lines.append(v)
    run_case(f"random-{case}", lines)

for f in FAILS[:15]:
    print("FAIL", f)
if FAILS:
    print(f"{len(FAILS)} failing cases")
    sys.exit(1)
print("PASS: all cases")
