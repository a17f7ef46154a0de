#!/bin/bash
# Hidden test: check.py writes reward.json with one 0/1 entry per milestone; reward is 1 only
# when every milestone passes. A crash in the checker still leaves a zero reward file.
# rsr_check.py (a verbatim copy of rsr's kit) runs the deliverable as nobody; python3 -I keeps
# the workdir off the checker's sys.path.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.json
cd /tmp
python3 -I /tests/check.py
rc=$?
if [ ! -s /logs/verifier/reward.json ]; then echo '{"reward": 0}' > /logs/verifier/reward.json; fi
cat /logs/verifier/reward.json
exit $rc
