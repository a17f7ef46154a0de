#!/bin/bash
set -e
install -m 0755 /solution/render.py /app/render
/app/render /app/examples/invoice.tmpl /app/examples/invoice.json | diff - /app/examples/invoice.out
