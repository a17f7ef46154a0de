"""Checks /app/heat against an exact Crank-Nicolson reference (small grids), analytic solutions
(stability, steady state, convergence order) and a large grid under a time bound."""
import math
import os
import random
import subprocess
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")

notes = []
rng = random.Random(1822)


def expect(cond, msg):
    if not cond:
        notes.append(msg)
        raise AssertionError(msg)


def run(alpha, L, nx, dt, steps, left, right, init, timeout=20):
    expect(os.access("/app/heat", os.X_OK), "/app/heat missing or not executable")
    text = f"{alpha!r} {L!r} {nx} {dt!r} {steps} {left!r} {right!r}\n" + "\n".join(repr(v) for v in init) + "\n"
    try:
        r = rc.run(["/app/heat"], input=text, timeout=timeout)
    except subprocess.TimeoutExpired:
        expect(False, f"/app/heat exceeded {timeout} s for nx={nx}, steps={steps}")
    expect(r.returncode == 0, f"/app/heat exited {r.returncode}: {r.stderr[-200:]}")
    vals = [float(v) for v in r.stdout.split()]
    expect(len(vals) == nx + 1, f"expected {nx + 1} values, got {len(vals)}")
    return vals


def reference(alpha, L, nx, dt, steps, left, right, init):
    u = list(init)
    u[0], u[nx] = left, right
    dx = L / nx
    r = alpha * dt / dx**2
    a, b = -r / 2, 1 + r
    for _ in range(steps):
        d = [0.0] * (nx + 1)
        for i in range(1, nx):
            d[i] = r / 2 * u[i - 1] + (1 - r) * u[i] + r / 2 * u[i + 1]
        d[1] -= a * left
        d[nx - 1] -= a * right
        c = [0.0] * (nx + 1)
        c[1] = a / b
        d[1] /= b
        for i in range(2, nx):
            m = b - a * c[i - 1]
            c[i] = a / m
            d[i] = (d[i] - a * d[i - 1]) / m
        u[nx - 1] = d[nx - 1]
        for i in range(nx - 2, 0, -1):
            u[i] = d[i] - c[i] * u[i + 1]
    return u


def maxerr(got, exp):
    """Max abs difference; NaN anywhere counts as infinite (max() would silently skip it)."""
    diffs = [abs(g - e) for g, e in zip(got, exp)]
    return math.inf if any(math.isnan(d) for d in diffs) else max(diffs)


def close(got, exp, rel=1e-9):
    scale = max(1.0, max(abs(v) for v in exp))
    return all(abs(g - e) <= rel * scale for g, e in zip(got, exp))


def m_matches_scheme():
    for case in range(12):
        nx = rng.choice([2, 3, 7, 20, 64, 101])
        alpha, L = rng.uniform(0.1, 3), rng.uniform(0.5, 5)
        dt = rng.choice([1e-4, 1e-3, 0.01, 0.3]) * L * L / alpha
        steps = rng.choice([0, 1, 2, 10, 37])
        left, right = rng.uniform(-5, 5), rng.uniform(-5, 5)
        init = [rng.uniform(-10, 10) for _ in range(nx + 1)]
        got = run(alpha, L, nx, dt, steps, left, right, init)
        exp = reference(alpha, L, nx, dt, steps, left, right, init)
        expect(close(got, exp), f"case {case} (nx={nx}, steps={steps}) differs from the scheme")


def m_unconditionally_stable():
    # r is 1e4: explicit schemes explode; CN stays bounded and follows the decay of the mode.
    nx, L, alpha = 50, 1.0, 1.0
    dt = 1e4 * (L / nx) ** 2 / alpha
    init = [math.sin(math.pi * i / nx) + 0.5 * math.sin(7 * math.pi * i / nx) for i in range(nx + 1)]
    got = run(alpha, L, nx, dt, 20, 0.0, 0.0, init)
    expect(all(math.isfinite(v) and abs(v) <= 1.5 for v in got), "solution not bounded for a large time step")
    expect(close(got, reference(alpha, L, nx, dt, 20, 0.0, 0.0, init)), "large-dt result differs from the scheme")


def m_boundary_steady_state():
    nx, L, alpha = 40, 2.0, 0.7
    left, right = rng.uniform(-3, 3), rng.uniform(-3, 3)
    init = [rng.uniform(-1, 1) for _ in range(nx + 1)]
    got = run(alpha, L, nx, 0.05, 4000, left, right, init)
    lin = [left + (right - left) * i / nx for i in range(nx + 1)]
    expect(maxerr(got, lin) < 1e-6, "long-time solution is not the linear steady state")
    expect(got[0] == left and got[-1] == right, "boundary values not exactly kept")


def analytic_error(nx, steps, T=0.1, L=1.0, alpha=1.0):
    dt = T / steps
    init = [math.sin(math.pi * i / nx) + 0.3 * math.sin(3 * math.pi * i / nx) for i in range(nx + 1)]
    got = run(alpha, L, nx, dt, steps, 0.0, 0.0, init)
    exact = [math.exp(-alpha * math.pi**2 * T) * math.sin(math.pi * i / nx)
             + 0.3 * math.exp(-alpha * 9 * math.pi**2 * T) * math.sin(3 * math.pi * i / nx) for i in range(nx + 1)]
    return maxerr(got, exact)


def m_second_order_convergence():
    errs = [analytic_error(nx, steps) for nx, steps in [(20, 10), (40, 20), (80, 40)]]
    ratios = [errs[i] / errs[i + 1] for i in range(2)]
    expect(errs[-1] < 1e-3 and all(3.4 < q < 4.6 for q in ratios), f"errors {errs} do not fall 4x per refinement")


def m_large_grid_fast():
    nx, L, alpha, T, steps = 200000, 1.0, 1.0, 0.01, 100
    init = [math.sin(math.pi * i / nx) for i in range(nx + 1)]
    got = run(alpha, L, nx, T / steps, steps, 0.0, 0.0, init, timeout=10)
    decay = math.exp(-math.pi**2 * T)
    idx = range(0, nx + 1, 97)
    err = maxerr([got[i] for i in idx], [decay * math.sin(math.pi * i / nx) for i in idx])
    expect(err < 1e-5, f"large grid error {err}")


MILESTONES = [m_matches_scheme, m_unconditionally_stable, m_boundary_steady_state, m_second_order_convergence, m_large_grid_fast]
result = {}
for m in MILESTONES:
    name = m.__name__[2:]
    try:
        m()
        result[name] = 1
    except Exception as e:  # noqa: BLE001
        if not isinstance(e, AssertionError):
            notes.append(f"{name}: {type(e).__name__}: {e}")
        result[name] = 0
    print(f"{name}: {'PASS' if result[name] else 'FAIL'}")
for n in notes:
    print("  note:", n[:300])
reward = int(all(result.values()))
rc.write_reward(reward, result)
sys.exit(0 if reward else 1)
