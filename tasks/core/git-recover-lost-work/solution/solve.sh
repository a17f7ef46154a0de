#!/bin/bash
set -e
cd /app/shop
# The reflog of HEAD records both the deleted branch's tip and main's pre-reset commit.
tip=$(git log -g --format='%H %s' | awk '$0 ~ / Add TSV export$/ {print $1; exit}')
lost=$(git log -g --format='%H %s' | awk '$0 ~ / Describe the project in the README$/ {print $1; exit}')
git branch feature/report-export "$tip"
git checkout -q main
git reset -q --hard "$lost"
