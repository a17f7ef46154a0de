#!/bin/bash
# Hidden test: starts /app/kvserver on a seeded port and checks each protocol area as a milestone.
mkdir -p /logs/verifier
python3 /tests/test_kv.py
