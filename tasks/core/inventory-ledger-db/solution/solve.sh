#!/bin/bash
set -e
cp /solution/schema.sql /app/schema.sql
python3 /solution/load.py
