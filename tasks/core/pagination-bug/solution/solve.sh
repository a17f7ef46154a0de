#!/bin/bash
set -e
cd /app
python3 - <<'PY'
import re
src = open("pager.py").read()
src = src.replace("return max(1, math.floor(total / per_page) + 1)",
                  "return max(1, -(-total // per_page))")
src = src.replace("start = (page - 1) * per_page + 1\n    return items[start:start + per_page - 1]",
                  "start = (page - 1) * per_page\n    return items[start:start + per_page]")
src = src.replace("half = width // 2", "half = (width - 1) // 2")
src = src.replace("""    last = min(pages, first + width)
    first = max(1, last - width)
    return list(range(first, last))""", """    last = min(pages, first + width - 1)
    first = max(1, last - width + 1)
    return list(range(first, last + 1))""")
open("pager.py", "w").write(src)
PY
