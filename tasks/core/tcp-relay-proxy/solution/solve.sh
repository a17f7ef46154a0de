#!/bin/bash
set -e
cat > /app/proxy <<'PY'
#!/usr/bin/env python3
import socket
import sys
import threading

listen_port, target_port, logfile = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
log_lock = threading.Lock()
log = open(logfile, "a", buffering=1)


def write_log(line: str) -> None:
    with log_lock:
        log.write(line + "\n")
        log.flush()


def pump(src: socket.socket, dst: socket.socket, counter: list, idx: int) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
            counter[idx] += len(data)
    except OSError:
        pass
    # Propagate EOF in this direction only; the other direction keeps flowing.
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def handle(client: socket.socket, n: int) -> None:
    try:
        target = socket.create_connection(("127.0.0.1", target_port))
    except OSError:
        client.close()
        write_log(f"{n} refused")
        return
    counter = [0, 0]
    t = threading.Thread(target=pump, args=(target, client, counter, 1), daemon=True)
    t.start()
    pump(client, target, counter, 0)
    t.join()
    client.close()
    target.close()
    write_log(f"{n} {counter[0]} {counter[1]}")


srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", listen_port))
srv.listen(128)
n = 0
while True:
    c, _ = srv.accept()
    n += 1
    threading.Thread(target=handle, args=(c, n), daemon=True).start()
PY
chmod +x /app/proxy
