#!/bin/bash
set -e
cp /solution/jsonpatch.py /app/jsonpatch.py
