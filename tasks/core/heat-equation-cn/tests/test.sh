#!/bin/bash
# Hidden test: check.py writes reward.json with one 0/1 entry per milestone; reward is 1 only
# when every milestone passes. A crash in the checker still leaves a zero reward file.
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.json
cd /tmp
python3 /tests/check.py
rc=$?
if [ ! -s /logs/verifier/reward.json ]; then echo '{"reward": 0}' > /logs/verifier/reward.json; fi
cat /logs/verifier/reward.json
exit $rc
