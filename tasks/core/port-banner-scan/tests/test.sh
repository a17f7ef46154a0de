#!/bin/bash
# Hidden test: starts seeded loopback services (banners, split banners, silent, closing) and checks the scan.
mkdir -p /logs/verifier
python3 /tests/test_scan.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
