#!/bin/bash
# Hidden test: checks each persistence mechanism, the legitimate configuration and the report.
mkdir -p /logs/verifier
# The preload library, if still present, must not interfere with the checker itself.
env -u LD_PRELOAD python3 /tests/test_cleanup.py
