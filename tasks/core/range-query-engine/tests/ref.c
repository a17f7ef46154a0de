/* Reference: lazy segment tree with range add, range sum, range max. */
#include <stdio.h>
#include <stdlib.h>
typedef long long ll;
static ll *sum, *mx, *lz;
static int n;
static ll a0[200005];
static void build(int x, int l, int r) {
    if (l == r) { sum[x] = mx[x] = a0[l]; return; }
    int m = (l + r) / 2;
    build(2 * x, l, m); build(2 * x + 1, m + 1, r);
    sum[x] = sum[2 * x] + sum[2 * x + 1];
    mx[x] = mx[2 * x] > mx[2 * x + 1] ? mx[2 * x] : mx[2 * x + 1];
}
static void apply_(int x, int l, int r, ll d) { sum[x] += d * (r - l + 1); mx[x] += d; lz[x] += d; }
static void push(int x, int l, int r) {
    if (lz[x]) { int m = (l + r) / 2; apply_(2 * x, l, m, lz[x]); apply_(2 * x + 1, m + 1, r, lz[x]); lz[x] = 0; }
}
static void pull(int x) {
    sum[x] = sum[2 * x] + sum[2 * x + 1];
    mx[x] = mx[2 * x] > mx[2 * x + 1] ? mx[2 * x] : mx[2 * x + 1];
}
static void add(int x, int l, int r, int ql, int qr, ll d) {
    if (qr < l || r < ql) return;
    if (ql <= l && r <= qr) { apply_(x, l, r, d); return; }
    push(x, l, r);
    int m = (l + r) / 2;
    add(2 * x, l, m, ql, qr, d); add(2 * x + 1, m + 1, r, ql, qr, d);
    pull(x);
}
static void set(int x, int l, int r, int i, ll v) {
    if (l == r) { sum[x] = mx[x] = v; return; }
    push(x, l, r);
    int m = (l + r) / 2;
    if (i <= m) set(2 * x, l, m, i, v); else set(2 * x + 1, m + 1, r, i, v);
    pull(x);
}
static ll qs(int x, int l, int r, int ql, int qr) {
    if (qr < l || r < ql) return 0;
    if (ql <= l && r <= qr) return sum[x];
    push(x, l, r);
    int m = (l + r) / 2;
    return qs(2 * x, l, m, ql, qr) + qs(2 * x + 1, m + 1, r, ql, qr);
}
static ll qm(int x, int l, int r, int ql, int qr) {
    if (ql <= l && r <= qr) return mx[x];
    push(x, l, r);
    int m = (l + r) / 2;
    if (qr <= m) return qm(2 * x, l, m, ql, qr);
    if (ql > m) return qm(2 * x + 1, m + 1, r, ql, qr);
    ll p = qm(2 * x, l, m, ql, qr), q = qm(2 * x + 1, m + 1, r, ql, qr);
    return p > q ? p : q;
}
int main(void) {
    int q;
    if (scanf("%d %d", &n, &q) != 2) return 1;
    for (int i = 1; i <= n; i++) scanf("%lld", &a0[i]);
    sum = calloc(4 * n + 4, sizeof(ll)); mx = calloc(4 * n + 4, sizeof(ll)); lz = calloc(4 * n + 4, sizeof(ll));
    build(1, 1, n);
    char op[4];
    while (q-- > 0 && scanf("%3s", op) == 1) {
        int l, r; ll v;
        if (op[0] == 'U') { scanf("%d %lld", &l, &v); set(1, 1, n, l, v); }
        else if (op[0] == 'A') { scanf("%d %d %lld", &l, &r, &v); add(1, 1, n, l, r, v); }
        else if (op[0] == 'S') { scanf("%d %d", &l, &r); printf("%lld\n", qs(1, 1, n, l, r)); }
        else { scanf("%d %d", &l, &r); printf("%lld\n", qm(1, 1, n, l, r)); }
    }
    return 0;
}
