"""Compares /app/ols.py with an exact rational-arithmetic OLS on generated data sets, including
badly scaled predictors and rank-deficient designs."""
import json
import math
import random
import sys
from fractions import Fraction

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")
WORK = rc.scratch()

rng = random.Random(90210)
fails = []


def exact_ols(header, rows, target):
    preds = [h for h in header if h != target]
    ti = header.index(target)
    pi = [header.index(h) for h in preds]
    X, y = [], []
    for r in rows:
        if any(c in ("", "NA") for c in r):
            continue
        y.append(Fraction(r[ti]))
        X.append([Fraction(1)] + [Fraction(r[i]) for i in pi])
    n, p = len(y), len(preds) + 1
    if n <= p:
        return None
    A = [[sum(X[i][a] * X[i][b] for i in range(n)) for b in range(p)] for a in range(p)]
    Xty = [sum(X[i][a] * y[i] for i in range(n)) for a in range(p)]
    # Gauss-Jordan on [A | Xty | I] gives beta and the inverse exactly.
    M = [A[a][:] + [Xty[a]] + [Fraction(int(a == b)) for b in range(p)] for a in range(p)]
    for c in range(p):
        piv = next((r for r in range(c, p) if M[r][c] != 0), None)
        if piv is None:
            return None
        M[c], M[piv] = M[piv], M[c]
        f = M[c][c]
        M[c] = [v / f for v in M[c]]
        for r in range(p):
            if r != c and M[r][c] != 0:
                g = M[r][c]
                M[r] = [a - g * b for a, b in zip(M[r], M[c])]
    beta = [M[a][p] for a in range(p)]
    inv_diag = [M[a][p + 1 + a] for a in range(p)]
    resid = [y[i] - sum(X[i][a] * beta[a] for a in range(p)) for i in range(n)]
    rss = sum(e * e for e in resid)
    ym = sum(y) / n
    tss = sum((v - ym) ** 2 for v in y)
    s2 = rss / (n - p)
    names = ["(intercept)"] + preds
    se = [math.sqrt(s2 * d) for d in inv_diag]
    coef = [float(b) for b in beta]
    r2 = 1 - rss / tss
    return {"n": n, "coefficients": dict(zip(names, coef)), "std_errors": dict(zip(names, se)),
            "t_values": {nm: float(b) / s for nm, b, s in zip(names, beta, se)},
            "r_squared": float(r2), "adj_r_squared": float(1 - (1 - r2) * Fraction(n - 1, n - p)),
            "sigma": math.sqrt(s2)}


def close(a, b):
    return isinstance(a, (int, float)) and abs(a - b) <= max(1e-9, 1e-6 * abs(b))


def run_case(name, header, rows, target):
    path = rc.put(f"{WORK}/ols_{name}.csv", ",".join(header) + "\n" + "".join(",".join(r) + "\n" for r in rows))
    exp = exact_ols(header, rows, target)
    r = rc.run(["python3", "/app/ols.py", path, target], timeout=60)
    if exp is None:
        if r.returncode != 1 or r.stdout.strip() or not r.stderr.lstrip().startswith("error:"):
            fails.append(f"{name}: rank-deficient design must give 'error:' and exit 1 (rc={r.returncode}, out={r.stdout[:80]!r})")
        return
    try:
        got = json.loads(r.stdout)
    except json.JSONDecodeError:
        fails.append(f"{name}: no JSON output (rc={r.returncode}) {r.stderr[-300:]}")
        return
    if got.get("n") != exp["n"]:
        fails.append(f"{name}: n={got.get('n')}, expected {exp['n']}")
    for key in ("coefficients", "std_errors", "t_values"):
        g = got.get(key, {})
        if not isinstance(g, dict) or set(g) != set(exp[key]):
            fails.append(f"{name}: {key} keys {sorted(g) if isinstance(g, dict) else g}")
            continue
        for k, v in exp[key].items():
            if not close(g[k], v):
                fails.append(f"{name}: {key}[{k}] = {g[k]!r}, exact {v!r}")
    for key in ("r_squared", "adj_r_squared", "sigma"):
        if not close(got.get(key), exp[key]):
            fails.append(f"{name}: {key} = {got.get(key)!r}, exact {exp[key]!r}")


def dec(x, places):
    return f"{x:.{places}f}"


def dataset(n, k, offsets, spreads, places=3, missing=0.0):
    coefs = [rng.uniform(-5, 5) for _ in range(k)]
    header = [f"x{j + 1}" for j in range(k)] + ["y"]
    rows = []
    for _ in range(n):
        xs = [offsets[j] + rng.uniform(0, spreads[j]) for j in range(k)]
        xs = [float(dec(v, places)) for v in xs]
        yv = 7 + sum(c * (v - o) for c, v, o in zip(coefs, xs, offsets)) + rng.gauss(0, 2)
        row = [dec(v, places) for v in xs] + [dec(yv, 4)]
        if rng.random() < missing:
            row[rng.randrange(len(row))] = rng.choice(["", "NA"])
        rows.append(row)
    return header, rows


for i in range(3):
    h, rows = dataset(rng.randint(30, 150), rng.randint(1, 4), [0] * 4, [100] * 4, missing=0.05)
    run_case(f"plain{i}", h, rows, "y")
h, rows = dataset(60, 2, [1e6, 3e6], [5, 3], places=3)
run_case("offset", h, rows, "y")
h, rows = dataset(80, 3, [5e5, 0, 2e6], [2, 10, 1], places=4, missing=0.1)
run_case("offset-missing", h, rows, "y")
h, rows = dataset(40, 2, [0, 0], [10, 10])
h2 = ["y"] + h[:2]  # target first
run_case("target-first", h2, [[r[2], r[0], r[1]] for r in rows], "y")
h, rows = dataset(30, 2, [0, 0], [10, 10])
run_case("constant", h + ["c"], [r + ["4.5"] for r in rows], "y")
run_case("collinear", h + ["z"], [r + [dec(2 * float(r[0]) - float(r[1]), 3)] for r in rows], "y")
h, rows = dataset(3, 2, [0, 0], [10, 10])
run_case("too-few", h, rows, "y")
for f in fails[:20]:
    print("FAIL", f)
if fails:
    sys.exit(1)
print("PASS")
