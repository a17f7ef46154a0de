#!/bin/bash
# Builds the sample tree shown to the agent.
set -e
mkdir -p /srv/data/logs/old "/srv/data/media files" /srv/data/.cache
head -c 52000 /dev/zero > /srv/data/logs/app.log
head -c 1200 /dev/zero > /srv/data/logs/old/app.log.1
head -c 90000 /dev/zero > "/srv/data/media files/clip one.bin"
head -c 7000 /dev/zero > /srv/data/.cache/blob
head -c 7000 /dev/zero > /srv/data/notes.txt
ln -s "/srv/data/media files/clip one.bin" /srv/data/link-to-clip
