#include <math.h>
#include "internal.h"

double geom_polygon_area(const geom_point *pts, int n) {
    double s = 0;
    for (int i = 1; i + 1 < n; i++) s += geom__cross(pts[0], pts[i], pts[i + 1]);
    return fabs(s) / 2;
}

double geom_polygon_perimeter(const geom_point *pts, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += geom__dist(pts[i], pts[(i + 1) % n]);
    return s;
}

int geom_point_in_polygon(const geom_point *pts, int n, geom_point p) {
    int inside = 0;
    for (int i = 0, j = n - 1; i < n; j = i++) {
        if ((pts[i].y > p.y) != (pts[j].y > p.y)) {
            double x = pts[j].x + (p.y - pts[j].y) * (pts[i].x - pts[j].x) / (pts[i].y - pts[j].y);
            if (p.x < x) inside = !inside;
        }
    }
    return inside;
}

const char *geom_version(void) { return "2.1.0"; }
