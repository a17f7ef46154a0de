#!/bin/bash
set -e
install -m 0755 /solution/kvserver.py /app/kvserver
