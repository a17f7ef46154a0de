#!/bin/bash
set -e
cp /solution/ols.py /app/ols.py
python3 /app/ols.py /app/housing.csv price
