#!/bin/bash
# Hidden test: migrates fresh version-1 databases and compares every table with a reference migration.
mkdir -p /logs/verifier
python3 /tests/test_migrate.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
