"""Runs /app/report.py with every sqlite3 connection traced; prints the statement count last."""
import runpy
import sqlite3
import sys

count = 0
_connect = sqlite3.connect


def traced_connect(*args, **kwargs):
    conn = _connect(*args, **kwargs)

    def trace(_sql):
        global count
        count += 1

    conn.set_trace_callback(trace)
    return conn


sqlite3.connect = traced_connect
sys.argv = ["report.py", *sys.argv[1:]]
try:
    runpy.run_path("/app/report.py", run_name="__main__")
finally:
    print(f"STATEMENTS={count}")
