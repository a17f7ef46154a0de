#!/bin/bash
set -e
cd /app/service
export FILTER_BRANCH_SQUELCH_WARNING=1
git filter-branch -f --prune-empty \
  --index-filter 'git rm -q --cached --ignore-unmatch config/secrets.env assets/dump.bin' \
  --tag-name-filter cat -- --all
git for-each-ref --format='%(refname)' refs/original | while read -r ref; do git update-ref -d "$ref"; done
git reflog expire --expire=now --all
git gc -q --prune=now
git checkout -q main
git status --short
