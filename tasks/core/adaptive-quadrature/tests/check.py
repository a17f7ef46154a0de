"""Runs /app/integrate.py on freshly generated integrands with closed-form integrals."""
import math
import random
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")

rng = random.Random(31337)
cases = []


def r(lo, hi):
    return round(rng.uniform(lo, hi), 3)


for _ in range(4):
    a3, a1, a0 = r(-3, 3), r(-3, 3), r(-3, 3)
    lo, hi = r(-4, 0), r(0.5, 4)
    F = lambda x, a3=a3, a1=a1, a0=a0: a3 * x**4 / 4 + a1 * x**2 / 2 + a0 * x
    cases.append((f"{a3}*x**3 + {a1}*x + {a0}", lo, hi, F(hi) - F(lo)))
for _ in range(3):
    k = r(-2, 2) or 1.0
    lo, hi = r(-2, 0), r(0.5, 3)
    cases.append((f"exp({k}*x)", lo, hi, (math.exp(k * hi) - math.exp(k * lo)) / k))
for _ in range(4):
    k = rng.choice([7, 23, 41, 60]) + r(0, 0.9)
    lo, hi = r(-10, -1), r(1, 10)
    cases.append((f"sin({k}*x)", lo, hi, (math.cos(k * lo) - math.cos(k * hi)) / k))
for _ in range(3):
    c = r(-1, 1)
    lo, hi = r(-3, -1.5), r(1.5, 3)
    cases.append((f"abs(x - {c})", lo, hi, ((c - lo) ** 2 + (hi - c) ** 2) / 2))
for _ in range(2):
    b = r(0.5, 9)
    cases.append(("sqrt(x)", 0, b, 2 / 3 * b**1.5))
for _ in range(2):
    lo, hi = r(-30, -1), r(1, 30)
    cases.append(("1/(1+x**2)", lo, hi, math.atan(hi) - math.atan(lo)))
lo, hi = r(0.2, 1), r(2, 6)
cases.append(("log(x)", lo, hi, (hi * math.log(hi) - hi) - (lo * math.log(lo) - lo)))
k = r(2, 5)
cases.append((f"x*cos({k}*x) + pi", 0.0, 2.0,
              (math.cos(k * 2) + k * 2 * math.sin(k * 2)) / k**2 - 1 / k**2 + 2 * math.pi))
c = r(0.2, 0.8)
cases.append((f"max(0, x - {c}) * exp(-x)", 0.0, 3.0,
              (math.exp(-c) * 1 - math.exp(-3) * (3 - c + 1))))
# Reversed and empty intervals.
cases.append(("x**2", 2.0, -1.0, -(8 / 3 + 1 / 3)))
cases.append(("cos(x)", 1.25, 1.25, 0.0))
# A mis-set closed form would be a test bug; guard the non-obvious ones numerically is overkill,
# they are derived by hand above.

fails = []
for expr, lo, hi, exact in cases:
    try:
        p = rc.run(["python3", "/app/integrate.py", expr, repr(lo), repr(hi)], timeout=10)
        got = float(p.stdout.strip().splitlines()[-1])
    except Exception as e:  # noqa: BLE001
        fails.append(f"{expr} on [{lo}, {hi}]: no result ({e})")
        continue
    if p.returncode != 0 or not abs(got - exact) <= 1e-8 * max(1.0, abs(exact)):
        fails.append(f"{expr} on [{lo}, {hi}]: got {got!r}, exact {exact!r}")
for f in fails:
    print("FAIL", f)
print(f"{len(cases) - len(fails)}/{len(cases)} cases within tolerance")
sys.exit(1 if fails else 0)
