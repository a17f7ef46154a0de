#!/bin/bash
# Hidden test: runs /app/pipeline on freshly generated messy inputs; reports one milestone per output.
mkdir -p /logs/verifier
python3 /tests/test_pipeline.py
