#!/bin/bash
set -e
cd /app/ledger
cat > /tmp/bisect_check.sh <<'SH'
#!/bin/bash
# 125 tells git bisect to skip commits where the package cannot even be imported.
python3 -c 'import ledger' 2>/dev/null || exit 125
python3 -m unittest tests.test_invoice.InvoiceTest.test_to_cents_rounds_half_up >/dev/null 2>&1
SH
chmod +x /tmp/bisect_check.sh
git bisect start main v1.0 >/dev/null
git bisect run /tmp/bisect_check.sh > /tmp/bisect.log
bad=$(git rev-parse refs/bisect/bad)
git bisect reset -q main 2>/dev/null || git bisect reset main
echo "$bad" > /app/first_bad_commit.txt
git -c user.name="Fixer" -c user.email=fixer@example.com revert --no-edit "$bad" >/dev/null
python3 -m unittest discover -s tests
