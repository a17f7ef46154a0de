#!/bin/bash
# Hidden test: runs /app/largest.sh on freshly generated trees and compares with a reference listing.
# rsr_check.py (a verbatim copy of rsr's kit) runs the deliverable as nobody; python3 -I keeps
# the workdir off the checker's sys.path.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p /logs/verifier
python3 -I /tests/test_largest.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
