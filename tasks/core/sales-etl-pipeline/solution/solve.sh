#!/bin/bash
set -e
install -m 0755 /solution/pipeline.py /app/pipeline
/app/pipeline /app/sample /app/sample-out
