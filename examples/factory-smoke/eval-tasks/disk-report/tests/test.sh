#!/bin/bash
# Hidden test: runs /app/largest.sh on freshly generated trees and compares with a reference listing.
mkdir -p /logs/verifier
python3 /tests/test_largest.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
