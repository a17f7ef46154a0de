#!/bin/bash
# Reference solution: copied to /solution only for the oracle agent.
set -euo pipefail
cat > /app/wordcount <<'SH'
#!/bin/bash
sort "$1" | uniq -c | awk '{print $2, $1}' | sort -k2,2nr -k1,1
SH
chmod +x /app/wordcount
