#!/usr/bin/env python3
"""Starts a few demo TCP services on 127.0.0.1 for trying out a scanner (runs in the foreground)."""
import socket
import threading
import time

SERVICES = {7101: b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", 7102: b"220 mail.local ESMTP ready\r\nmore\r\n", 7105: None}


def serve(port, banner):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen()
    while True:
        c, _ = s.accept()
        if banner:
            c.sendall(banner)
        threading.Timer(3, c.close).start()


for p, b in SERVICES.items():
    threading.Thread(target=serve, args=(p, b), daemon=True).start()
print("demo services on 7101 (ssh), 7102 (smtp), 7105 (silent); Ctrl-C to stop", flush=True)
while True:
    time.sleep(3600)
