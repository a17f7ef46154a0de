#!/bin/bash
# Builds /app/shop with a deterministic history, then loses work the way a hurried developer would.
set -e
export GIT_AUTHOR_NAME="Dana Developer" GIT_AUTHOR_EMAIL="dana@example.com"
export GIT_COMMITTER_NAME="Dana Developer" GIT_COMMITTER_EMAIL="dana@example.com"
n=0
commit() { n=$((n+1)); export GIT_AUTHOR_DATE="2024-03-0${n}T10:00:00Z" GIT_COMMITTER_DATE="2024-03-0${n}T10:00:00Z"; git add -A; git commit -q -m "$1"; }
mkdir -p /app/shop && cd /app/shop
git init -q -b main
git config user.name "Dana Developer"; git config user.email dana@example.com
printf 'def total(prices):\n    return sum(prices)\n' > billing.py
printf '# Shop\n' > README.md
commit "Initial billing module"
printf 'def report(rows):\n    return "\\n".join(str(r) for r in rows)\n' > report.py
commit "Add plain-text report"
git checkout -q -b feature/report-export
printf 'import csv, io\n\n\ndef export_csv(rows):\n    buf = io.StringIO()\n    csv.writer(buf).writerows(rows)\n    return buf.getvalue()\n' > export.py
commit "Add CSV export for reports"
printf '\n\ndef export_tsv(rows):\n    return "\\n".join("\\t".join(map(str, r)) for r in rows) + "\\n"\n' >> export.py
commit "Add TSV export"
git checkout -q main
printf 'def total(prices):\n    return round(sum(prices), 2)\n' > billing.py
commit "Round totals to cents"
printf '# Shop\n\nBilling and reporting helpers.\n' > README.md
commit "Describe the project in the README"
# The accidents: the feature branch is deleted unmerged, then main is reset one commit back.
git branch -q -D feature/report-export
git reset -q --hard HEAD~1
