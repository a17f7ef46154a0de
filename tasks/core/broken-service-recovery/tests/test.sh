#!/bin/bash
# Hidden test: drives invsvc only through invsvcctl and HTTP; writes milestone results to reward.json.
mkdir -p /logs/verifier
python3 /tests/test_service.py
