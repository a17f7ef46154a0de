#!/bin/bash
# Hidden test: /app/report.json holds the per-region totals of the original sales.csv.
mkdir -p /logs/verifier
python3 /tests/test_report.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
