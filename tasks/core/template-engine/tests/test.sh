#!/bin/bash
# Hidden test: renders many templates against one context; one milestone per feature area.
mkdir -p /logs/verifier
python3 /tests/test_render.py
