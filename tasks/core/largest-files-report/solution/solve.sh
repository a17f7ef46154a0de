#!/bin/bash
set -e
cat > /app/largest.sh <<'SH'
#!/bin/bash
# -type f without -L never follows symlinks; %P gives the path relative to the start point.
dir=$1; n=$2
find "$dir" -type f -printf '%s\t%P\n' | LC_ALL=C sort -t $'\t' -k1,1nr -k2,2 | head -n "$n"
SH
chmod +x /app/largest.sh
