#!/bin/bash
# Hidden test: queries the service the agent left running on 127.0.0.1:8080.
mkdir -p /logs/verifier
python3 /tests/test_service.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
