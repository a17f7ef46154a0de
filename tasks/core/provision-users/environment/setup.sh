#!/bin/bash
# Pre-existing state the provisioning script must reconcile.
set -e
groupadd -g 1500 legacy
useradd -m -u 3003 -s /bin/sh -c "C. Chen" -G legacy carol
useradd -m -u 2900 -s /bin/bash olddev
echo "old project notes" > /home/olddev/notes.txt
useradd -u 2901 -s /bin/sh tempuser
