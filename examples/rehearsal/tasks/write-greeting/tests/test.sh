#!/bin/sh
# Hidden test: reward 1 iff /root/greeting.txt holds the greeting
mkdir -p /logs/verifier
if [ "$(cat /root/greeting.txt 2>/dev/null)" = 'hello, rehearsal' ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
