#!/bin/bash
# Reference solution: copied to /solution only for the oracle agent.
set -euo pipefail
sort /app/data/words.txt | uniq -c | awk '{print $2, $1}' | sort -k2,2nr -k1,1 > /app/counts.txt
