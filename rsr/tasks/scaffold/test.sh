#!/bin/bash
# Runs after the agent; /tests holds this directory. rsr_check.py is a verbatim copy of rsr's
# checker kit (keep it identical): test_outputs.py runs the deliverable through it and writes
# /logs/verifier/reward.txt itself. python3 -I keeps /app off the checker's sys.path.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p /logs/verifier
cd /tmp
python3 -I /tests/test_outputs.py
