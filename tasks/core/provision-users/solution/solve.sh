#!/bin/bash
set -e
install -m 0755 /solution/provision.sh /app/provision.sh
/app/provision.sh
