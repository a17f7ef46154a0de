#!/bin/bash
# Hidden test: passes iff /app/hello.txt, stripped of surrounding whitespace, is "Hello, world!".
mkdir -p /logs/verifier
python3 /tests/test_hello.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
