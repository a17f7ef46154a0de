#!/bin/bash
# Hidden test of the rl-tiny family: one short command solves the task.
mkdir -p /logs/verifier
if [ -d /app/out ]; then echo 1 > /logs/verifier/reward.txt; exit 0; fi
echo "FAIL: Create the directory /app/out. not done"
echo 0 > /logs/verifier/reward.txt
exit 1
