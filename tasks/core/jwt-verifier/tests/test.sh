#!/bin/bash
# Hidden test: feeds /app/jwtcheck a fresh battery of valid, forged and malformed tokens.
mkdir -p /logs/verifier
python3 /tests/test_jwt.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
