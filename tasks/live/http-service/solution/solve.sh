#!/bin/bash
set -e
cat > /app/server.py <<'PY'
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        url = urlparse(self.path)
        q = parse_qs(url.query)
        if url.path == "/health":
            return self.reply(200, "ok")
        if url.path == "/add":
            try:
                return self.reply(200, str(int(q["a"][0]) + int(q["b"][0])))
            except (KeyError, ValueError):
                return self.reply(400, "bad request")
        self.reply(404, "not found")

    def reply(self, status, body):
        data = (body + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", 8080), Handler).serve_forever()
PY
setsid nohup python3 /app/server.py > /app/server.log 2>&1 < /dev/null &
for i in $(seq 50); do
  python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:8080/health", timeout=1)' 2>/dev/null && exit 0
  sleep 0.1
done
echo "server did not come up" >&2
exit 1
