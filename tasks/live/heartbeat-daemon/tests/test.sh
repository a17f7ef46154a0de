#!/bin/bash
# Hidden test: inspects the process table and the heartbeat log of the daemon the agent left running.
mkdir -p /logs/verifier
python3 /tests/test_daemon.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
