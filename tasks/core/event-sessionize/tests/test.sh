#!/bin/bash
# Hidden test: generates fresh event sets (duplicates, bad lines, mixed offsets) and compares sessions.
mkdir -p /logs/verifier
python3 /tests/test_sessions.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
