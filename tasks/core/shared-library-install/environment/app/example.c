#include <stdio.h>
#include <geom/geom.h>

int main(void) {
    geom_point sq[] = {{0, 0}, {2, 0}, {2, 2}, {0, 2}};
    printf("libgeom %s: area %.1f\n", geom_version(), geom_polygon_area(sq, 4));
    return 0;
}
