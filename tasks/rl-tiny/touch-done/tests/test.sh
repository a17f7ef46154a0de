#!/bin/bash
# Hidden test of the rl-tiny family: one short command solves the task.
mkdir -p /logs/verifier
if [ -f /app/done ]; then echo 1 > /logs/verifier/reward.txt; exit 0; fi
echo "FAIL: Create an empty file /app/done. not done"
echo 0 > /logs/verifier/reward.txt
exit 1
