#!/bin/sh
# Hidden test: reward 1 iff /root/count.txt holds the line count of /etc/passwd
mkdir -p /logs/verifier
if [ "$(tr -d ' \n' < /root/count.txt 2>/dev/null)" = "$(wc -l < /etc/passwd | tr -d ' ')" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
