/* Crank-Nicolson for u_t = alpha u_xx with Dirichlet boundaries; Thomas algorithm per step. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    double alpha, L, dt, left, right;
    long nx, steps;
    if (scanf("%lf %lf %ld %lf %ld %lf %lf", &alpha, &L, &nx, &dt, &steps, &left, &right) != 7) return 1;
    double *u = malloc((nx + 1) * sizeof *u), *rhs = malloc((nx + 1) * sizeof *rhs);
    double *cp = malloc((nx + 1) * sizeof *cp);
    for (long i = 0; i <= nx; i++)
        if (scanf("%lf", &u[i]) != 1) return 1;
    u[0] = left;
    u[nx] = right;
    double dx = L / nx, r = alpha * dt / (dx * dx);
    double a = -r / 2, b = 1 + r;
    /* The matrix is the same every step: precompute the modified super-diagonal. */
    cp[1] = a / b;
    for (long i = 2; i < nx; i++) cp[i] = a / (b - a * cp[i - 1]);
    for (long s = 0; s < steps; s++) {
        for (long i = 1; i < nx; i++) rhs[i] = r / 2 * u[i - 1] + (1 - r) * u[i] + r / 2 * u[i + 1];
        rhs[1] -= a * left;
        rhs[nx - 1] -= a * right;
        rhs[1] /= b;
        for (long i = 2; i < nx; i++) rhs[i] = (rhs[i] - a * rhs[i - 1]) / (b - a * cp[i - 1]);
        u[nx - 1] = rhs[nx - 1];
        for (long i = nx - 2; i >= 1; i--) u[i] = rhs[i] - cp[i] * u[i + 1];
    }
    for (long i = 0; i <= nx; i++) printf("%.17g\n", u[i]);
    return 0;
}
