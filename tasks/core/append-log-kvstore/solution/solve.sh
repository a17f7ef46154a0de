#!/bin/bash
set -e
cp /solution/kv.py /app/kv.py
