#!/bin/bash
# Hidden test: builds fresh databases from /app/schema.sql, exercises every rule, and checks the loaded ledger.
mkdir -p /logs/verifier
python3 /tests/test_ledger.py
