#ifndef GEOM_INTERNAL_H
#define GEOM_INTERNAL_H
#include "geom/geom.h"
double geom__cross(geom_point o, geom_point a, geom_point b);
double geom__dist(geom_point a, geom_point b);
#endif
