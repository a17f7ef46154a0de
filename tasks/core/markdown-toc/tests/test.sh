#!/bin/bash
# Hidden test: generates fresh Markdown documents and compares the table of contents line by line.
mkdir -p /logs/verifier
python3 /tests/test_toc.py
rc=$?
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit $rc
