#!/usr/bin/env python3
"""invsvc: a tiny inventory HTTP API backed by SQLite."""
import argparse
import configparser
import json
import logging
import re
import sqlite3
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EXPECTED_SCHEMA = 2


def load_config(path):
    cp = configparser.ConfigParser()
    with open(path) as f:
        cp.read_file(f)
    return cp


class Handler(BaseHTTPRequestHandler):
    db_path = ""

    def log_message(self, fmt, *args):
        logging.info("%s %s", self.address_string(), fmt % args)

    def _send(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _db(self):
        return sqlite3.connect(self.db_path, timeout=5)

    def do_GET(self):
        if self.path == "/health":
            try:
                with self._db() as con:
                    version = con.execute("SELECT max(version) FROM schema_version").fetchone()[0]
            except sqlite3.Error as e:
                self._send(503, {"status": "error", "reason": str(e)})
                return
            if version != EXPECTED_SCHEMA:
                self._send(503, {"status": "degraded", "reason": f"schema version {version}, expected {EXPECTED_SCHEMA}"})
                return
            self._send(200, {"status": "ok"})
            return
        m = re.fullmatch(r"/items/([A-Za-z0-9-]+)", self.path)
        if m:
            try:
                with self._db() as con:
                    row = con.execute("SELECT sku, name, qty, location FROM items WHERE sku = ?", (m.group(1),)).fetchone()
            except sqlite3.Error as e:
                logging.error("query failed: %s", e)
                self._send(500, {"error": str(e)})
                return
            if row is None:
                self._send(404, {"error": "not found"})
            else:
                self._send(200, dict(zip(("sku", "name", "qty", "location"), row)))
            return
        self._send(404, {"error": "not found"})

    def do_POST(self):
        if self.path != "/items":
            self._send(404, {"error": "not found"})
            return
        try:
            item = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            with self._db() as con:
                con.execute(
                    "INSERT INTO items (sku, name, qty, location) VALUES (?, ?, ?, ?)",
                    (item["sku"], item["name"], int(item["qty"]), item.get("location", "UNASSIGNED")),
                )
        except (KeyError, ValueError, TypeError) as e:
            self._send(400, {"error": f"bad item: {e}"})
            return
        except sqlite3.Error as e:
            logging.error("insert failed: %s", e)
            self._send(500, {"error": str(e)})
            return
        self._send(201, {"created": item["sku"]})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    args = ap.parse_args()
    cfg = load_config(args.config)
    logging.basicConfig(filename=cfg["logging"]["file"], level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(message)s")
    Handler.db_path = cfg["storage"]["db"]
    host, port = cfg["server"]["host"], cfg["server"].getint("port")
    server = ThreadingHTTPServer((host, port), Handler)
    logging.info("listening on %s:%d", host, port)
    server.serve_forever()


if __name__ == "__main__":
    main()
