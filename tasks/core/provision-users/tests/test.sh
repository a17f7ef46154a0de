#!/bin/bash
# Hidden test: checks the provisioned state, edits the inputs, reruns the script and checks again.
mkdir -p /logs/verifier
python3 /tests/test_provision.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
