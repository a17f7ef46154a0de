"""Builds /app/ledger: 60 commits with fixed dates; a syntax error lives in commits 30-34 and the
rounding regression arrives in commit 41 ("Simplify to_cents")."""
import os
import subprocess

R = "/app/ledger"
os.makedirs(f"{R}/ledger", exist_ok=True)
os.makedirs(f"{R}/tests", exist_ok=True)
env = dict(os.environ, GIT_AUTHOR_NAME="Lee Maintainer", GIT_AUTHOR_EMAIL="lee@example.com",
           GIT_COMMITTER_NAME="Lee Maintainer", GIT_COMMITTER_EMAIL="lee@example.com")


def git(*a):
    subprocess.run(["git", *a], cwd=R, check=True, env=env, stdout=subprocess.DEVNULL)


def write(path, text):
    with open(f"{R}/{path}", "w") as f:
        f.write(text)


def append(path, text):
    with open(f"{R}/{path}", "a") as f:
        f.write(text)


n = 0


def commit(msg):
    global n
    n += 1
    env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"{1704103200 + n * 3600} +0000"
    git("add", "-A")
    git("commit", "-q", "-m", msg)


git("init", "-q", "-b", "main")
UTIL_HEAD = '''from decimal import Decimal, ROUND_HALF_UP


def to_cents(amount):
    """Amount in currency units (str, int, float or Decimal) -> integer cents, half-up."""
    return int((Decimal(str(amount)) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))


def from_cents(cents):
    return f"{cents // 100}.{cents % 100:02d}"


# ---- helpers below -------------------------------------------------------
'''
UTIL_HEAD_BAD = UTIL_HEAD.replace(
    'return int((Decimal(str(amount)) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))',
    "return int(round(float(amount) * 100))")
CURRENCY = '''RATES = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17}


def convert(amount, currency):
    return amount * RATES[currency]
'''
write("ledger/util.py", UTIL_HEAD)
write("ledger/currency.py", CURRENCY)
write("ledger/tax.py", '''from .util import to_cents


def vat_cents(net, rate):
    """VAT on a net amount in cents for a percentage rate, half-up to whole cents."""
    return to_cents(net * rate / 100 / 100)
''')
write("ledger/invoice.py", '''from .tax import vat_cents
from .util import to_cents, from_cents


def invoice_total(lines, vat_rate):
    """lines: (description, unit_price, quantity); returns the gross total as a string."""
    net = sum(to_cents(price) * qty for _, price, qty in lines)
    return from_cents(net + vat_cents(net, vat_rate))
''')
write("ledger/__init__.py", "from . import currency, invoice, tax, util  # noqa: F401\n")
write("tests/test_invoice.py", '''import unittest

from ledger.invoice import invoice_total
from ledger.util import to_cents


class InvoiceTest(unittest.TestCase):
    def test_to_cents_rounds_half_up(self):
        self.assertEqual(to_cents("0.125"), 13)
        self.assertEqual(to_cents("2.675"), 268)
        self.assertEqual(to_cents(1.005), 101)

    def test_invoice_total(self):
        self.assertEqual(invoice_total([("pen", "1.10", 3), ("pad", "2.675", 1)], 20), "7.18")


if __name__ == "__main__":
    unittest.main()
''')
write("README.md", "# ledger\n\nInvoice arithmetic. Run the tests with `python3 -m unittest discover -s tests`.\n")
commit("Initial ledger package")
for i in range(2, 61):
    if i == 5:
        append("README.md", "\nReleased as v1.0.\n")
        commit("Release v1.0")
        git("tag", "v1.0")
    elif i == 30:
        write("ledger/currency.py", CURRENCY.replace("def convert(amount, currency):", "def convert(amount, currency)"))
        append("ledger/currency.py", f"\n\ndef rate(currency):\n    return RATES[currency]\n")
        commit("Add currency.rate")
    elif i == 35:
        src = open(f"{R}/ledger/currency.py").read().replace("def convert(amount, currency)\n", "def convert(amount, currency):\n")
        write("ledger/currency.py", src)
        commit("Fix typo in currency.convert")
    elif i == 41:
        src = open(f"{R}/ledger/util.py").read().replace(UTIL_HEAD, UTIL_HEAD_BAD)
        write("ledger/util.py", src)
        commit("Simplify to_cents")
    elif i % 3 == 0:
        append("ledger/util.py", f"\n\ndef helper_{i}(x):\n    return x * {i} // 7\n")
        commit(f"Add helper_{i}")
    elif i % 3 == 1:
        write(f"docs/note_{i}.md", f"Design note {i}.\n") if os.path.isdir(f"{R}/docs") else (os.makedirs(f"{R}/docs"), write(f"docs/note_{i}.md", f"Design note {i}.\n"))
        commit(f"Document design decision {i}")
    else:
        append("ledger/currency.py", f"\n# reviewed in sprint {i}\n")
        commit(f"Review currency module (sprint {i})")
