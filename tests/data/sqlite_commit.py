"""A real database's own commit latency: SQLite in WAL mode with synchronous=FULL
(every commit writes its WAL frames and fdatasyncs the WAL), one connection, one
small INSERT per transaction. The WAL is checkpointed every 100 pages
(wal_autocheckpoint), so after the warm-up the WAL is overwritten in place, as a
PostgreSQL segment is once pre-zeroed: what latscope's commit test predicts.

    python3 sqlite_commit.py DIR [WARMUP] [COMMITS]

Prints {"p50_ms": …, "p90_ms": …, "commits": …} (the warm-up left out)."""
import json
import os
import sqlite3
import sys
import time

d = sys.argv[1]
warmup = int(sys.argv[2]) if len(sys.argv) > 2 else 150
n = int(sys.argv[3]) if len(sys.argv) > 3 else 200
path = os.path.join(d, "commit-test.sqlite")
for f in (path, path + "-wal", path + "-shm"):
    if os.path.exists(f):
        os.remove(f)
db = sqlite3.connect(path, isolation_level=None)
assert db.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
db.execute("PRAGMA synchronous=FULL")
db.execute("PRAGMA wal_autocheckpoint=100")
db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)")
lat = []
for i in range(warmup + n):
    t = time.perf_counter()
    db.execute("BEGIN")
    db.execute("INSERT INTO t (v) VALUES (?)", (os.urandom(100),))
    db.execute("COMMIT")
    if i >= warmup:
        lat.append((time.perf_counter() - t) * 1000.0)
db.close()
for f in (path, path + "-wal", path + "-shm"):
    if os.path.exists(f):
        os.remove(f)
lat.sort()
print(json.dumps({"p50_ms": lat[len(lat) // 2], "p90_ms": lat[int(len(lat) * 0.9)], "commits": len(lat)}))
