#!/bin/bash
# Hidden test: runs the query on freshly generated databases and compares with an independent computation.
mkdir -p /logs/verifier
python3 /tests/test_query.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
