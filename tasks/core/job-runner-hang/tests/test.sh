#!/bin/bash
# Hidden test: reward 1 iff every check in the Python test passes.
mkdir -p /logs/verifier
cd /tmp
python3 /tests/check.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
