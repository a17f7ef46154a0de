#!/bin/bash
# Hidden test: builds fresh shadow files and wordlists and compares the cracked accounts.
mkdir -p /logs/verifier
python3 /tests/test_crack.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
