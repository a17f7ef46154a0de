"""Ordinary least squares via Householder QR on centred columns (stable for offset data)."""
import csv
import json
import math
import sys


def fail(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(1)


def read(path, target):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    if target not in header:
        fail(f"no column {target!r}")
    preds = [h for h in header if h != target]
    ti, pi = header.index(target), [header.index(h) for h in preds]
    X, y = [], []
    for r in body:
        if not r:
            continue
        cells = [c.strip() for c in r]
        if any(c in ("", "NA") for c in cells):
            continue
        y.append(float(cells[ti]))
        X.append([float(cells[i]) for i in pi])
    return preds, X, y


def householder_solve(A, b):
    """Least squares for full-rank A (m x k) via Householder QR; returns (x, R)."""
    m, k = len(A), len(A[0]) if A else 0
    A = [row[:] for row in A]
    b = b[:]
    norms = [math.sqrt(sum(A[i][j] ** 2 for i in range(m))) for j in range(k)]
    for j in range(k):
        alpha = math.sqrt(sum(A[i][j] ** 2 for i in range(j, m)))
        if alpha <= 1e-10 * max(norms[j], 1e-300):
            fail("singular design")
        if A[j][j] > 0:
            alpha = -alpha
        v = [0.0] * m
        v[j] = A[j][j] - alpha
        for i in range(j + 1, m):
            v[i] = A[i][j]
        vv = sum(x * x for x in v[j:])
        if vv == 0:
            continue
        for c in range(j, k):
            s = sum(v[i] * A[i][c] for i in range(j, m)) * 2 / vv
            for i in range(j, m):
                A[i][c] -= s * v[i]
        s = sum(v[i] * b[i] for i in range(j, m)) * 2 / vv
        for i in range(j, m):
            b[i] -= s * v[i]
    R = [[A[i][c] for c in range(k)] for i in range(k)]
    x = [0.0] * k
    for i in range(k - 1, -1, -1):
        x[i] = (b[i] - sum(R[i][c] * x[c] for c in range(i + 1, k))) / R[i][i]
    return x, R


def invert_upper(R):
    k = len(R)
    inv = [[0.0] * k for _ in range(k)]
    for i in range(k - 1, -1, -1):
        inv[i][i] = 1 / R[i][i]
        for j in range(i + 1, k):
            inv[i][j] = -sum(R[i][m] * inv[m][j] for m in range(i + 1, j + 1)) / R[i][i]
    return inv


def main():
    preds, X, y = read(sys.argv[1], sys.argv[2])
    n, k = len(y), len(preds)
    p = k + 1
    if n <= p:
        fail("not enough observations")
    # Centring removes the intercept from the QR problem and the offsets that ruin conditioning.
    xm = [math.fsum(r[j] for r in X) / n for j in range(k)]
    ym = math.fsum(y) / n
    Xc = [[r[j] - xm[j] for j in range(k)] for r in X]
    yc = [v - ym for v in y]
    if k:
        beta, R = householder_solve(Xc, yc)
    else:
        beta, R = [], []
    b0 = ym - math.fsum(b * m for b, m in zip(beta, xm))
    resid = [yc[i] - math.fsum(beta[j] * Xc[i][j] for j in range(k)) for i in range(n)]
    rss = math.fsum(e * e for e in resid)
    tss = math.fsum(v * v for v in yc)
    s2 = rss / (n - p)
    # Var(beta) = s2 (Xc^T Xc)^-1 = s2 R^-1 R^-T; Var(b0) = s2/n + xm^T Var(beta) xm.
    Rinv = invert_upper(R) if k else []
    cov = [[math.fsum(Rinv[a][m] * Rinv[b][m] for m in range(k)) for b in range(k)] for a in range(k)]
    var_b = [s2 * cov[j][j] for j in range(k)]
    var_b0 = s2 / n + s2 * math.fsum(xm[a] * cov[a][b] * xm[b] for a in range(k) for b in range(k))
    names = ["(intercept)"] + preds
    coef = [b0] + beta
    se = [math.sqrt(var_b0)] + [math.sqrt(v) for v in var_b]
    r2 = 1 - rss / tss if tss else 0.0
    out = {
        "n": n,
        "coefficients": dict(zip(names, coef)),
        "std_errors": dict(zip(names, se)),
        "t_values": {nm: c / s if s else float("inf") for nm, c, s in zip(names, coef, se)},
        "r_squared": r2,
        "adj_r_squared": 1 - (1 - r2) * (n - 1) / (n - p),
        "sigma": math.sqrt(s2),
    }
    print(json.dumps(out))


main()
