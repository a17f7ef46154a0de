#!/bin/bash
set -e
cp /solution/heat.c /app/heat.c
gcc -O2 -o /app/heat /app/heat.c
