#!/bin/bash
set -e
cp /solution/rq.c /app/rq.c
gcc -O2 -o /app/rq /app/rq.c
