#!/bin/bash
# Hidden test: checks each persistence mechanism, the legitimate configuration and the report.
# rsr_check.py (a verbatim copy of rsr's kit) runs the deliverable as nobody; python3 -I keeps
# the workdir off the checker's sys.path.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p /logs/verifier
# The preload library, if still present, must not interfere with the checker itself.
env -u LD_PRELOAD python3 -I /tests/test_cleanup.py
