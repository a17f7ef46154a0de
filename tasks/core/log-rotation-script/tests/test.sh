#!/bin/bash
# Hidden test: drives /app/rotate.sh through several rounds with an open writer and checks every generation.
mkdir -p /logs/verifier
python3 /tests/test_rotate.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
