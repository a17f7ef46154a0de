#!/bin/bash
# Runs after the agent; /tests holds this directory. Write 1 (pass) or 0 to reward.txt.
mkdir -p /logs/verifier
# The checker's own print goes to the log, not into reward.txt (one number only).
if python3 /tests/test_outputs.py; then reward=1; else reward=0; fi
echo "$reward" > /logs/verifier/reward.txt
