#!/bin/bash
# Hidden test: reward 1 iff every check in the Python test passes.
# rsr_check.py (a verbatim copy of rsr's kit) runs the deliverable as nobody; python3 -I keeps
# the workdir off the checker's sys.path.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p /logs/verifier
cd /tmp
python3 -I /tests/check.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
