#!/bin/bash
# Hidden test: converts freshly generated INI files and compares the parsed JSON.
mkdir -p /logs/verifier
python3 /tests/test_ini.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
