#ifndef GEOM_GEOM_H
#define GEOM_GEOM_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct { double x, y; } geom_point;

/* Area of a simple polygon (absolute value, shoelace formula). */
double geom_polygon_area(const geom_point *pts, int n);
/* Perimeter of a closed polygon. */
double geom_polygon_perimeter(const geom_point *pts, int n);
/* 1 if p lies strictly inside the polygon, 0 otherwise (even-odd rule). */
int geom_point_in_polygon(const geom_point *pts, int n, geom_point p);
/* Library version string, "2.1.0". */
const char *geom_version(void);

#ifdef __cplusplus
}
#endif
#endif
