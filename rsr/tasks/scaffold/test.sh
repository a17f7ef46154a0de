#!/bin/bash
# Runs after the agent; /tests holds this directory. Write 1 (pass) or 0 to reward.txt.
mkdir -p /logs/verifier
if python3 /tests/test_outputs.py; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
