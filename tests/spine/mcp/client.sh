call='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"secret","arguments":{}}}'
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}' "$call" | /usr/local/bin/notes-mcp \
  | grep -o '"text":"[^"]*"' | cut -d'"' -f4 > /app/stdio.txt
for i in $(seq 40); do exec 3<>/dev/tcp/notes/18081 && break; sleep 0.5; done
printf 'POST /mcp HTTP/1.1\r\nHost: notes\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %s\r\n\r\n%s' "${#call}" "$call" >&3
grep -o '"text":"[^"]*"' <&3 | cut -d'"' -f4 > /app/http.txt
