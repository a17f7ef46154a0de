#!/bin/bash
# Hidden test: runs /app/summarize on freshly generated CSV files and compares with a reference.
mkdir -p /logs/verifier
python3 /tests/test_summary.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
