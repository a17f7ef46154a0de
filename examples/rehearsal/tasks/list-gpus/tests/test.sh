#!/bin/sh
# Hidden test: reward 1 iff /root/gpus.txt lists a GPU
mkdir -p /logs/verifier
if grep -q '^GPU ' /root/gpus.txt 2>/dev/null; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
