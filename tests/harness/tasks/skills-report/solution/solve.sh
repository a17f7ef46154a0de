#!/bin/bash
set -e
python3 /skills/region-totals/scripts/totals.py /app/sales.csv /app/report.json
