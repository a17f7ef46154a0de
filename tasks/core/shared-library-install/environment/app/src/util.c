#include <math.h>
#include "internal.h"

double geom__cross(geom_point o, geom_point a, geom_point b) {
    return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
}

double geom__dist(geom_point a, geom_point b) {
    return hypot(a.x - b.x, a.y - b.y);
}
