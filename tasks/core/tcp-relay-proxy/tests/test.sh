#!/bin/bash
# Hidden test: runs /app/proxy against seeded backends (hashing, echo, refused) with concurrent clients.
mkdir -p /logs/verifier
python3 /tests/test_proxy.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
