#!/bin/bash
# Hidden test: starts /app/kvserver on a seeded port and checks each protocol area as a milestone.
# rsr_check.py (a verbatim copy of rsr's kit) runs the deliverable as nobody; python3 -I keeps
# the workdir off the checker's sys.path.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p /logs/verifier
python3 -I /tests/test_kv.py
