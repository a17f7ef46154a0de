#!/bin/bash
set -e
install -m 0755 /solution/migrate.py /app/migrate
/app/migrate /app/contacts.db
