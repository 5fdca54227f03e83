//! The store's schema and its forward migrations, versioned with `PRAGMA user_version`.

use rusqlite::Connection;

use super::StoreError;

/// Each entry brings the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 0 → 1: runs and their histograms.
    "CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        label TEXT,
        target TEXT NOT NULL,
        started_at_ms INTEGER NOT NULL,
        duration_s REAL NOT NULL,
        version TEXT NOT NULL,
        config TEXT NOT NULL,
        env TEXT NOT NULL,
        summary TEXT NOT NULL,
        timeline TEXT NOT NULL,
        findings TEXT NOT NULL,
        text TEXT NOT NULL,
        headline TEXT NOT NULL
    );
    CREATE INDEX runs_started ON runs (started_at_ms);
    CREATE INDEX runs_label ON runs (label);
    CREATE TABLE histograms (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        second INTEGER,
        v2 BLOB NOT NULL
    );
    CREATE INDEX histograms_run ON histograms (run_id);",
];

/// The schema version this latscope writes.
pub const VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the database to [`VERSION`], one transaction per step; refuses a database
/// from a newer latscope.
pub fn migrate(conn: &mut Connection, path: &str) -> Result<(), StoreError> {
    let sql = |source| StoreError::Sqlite {
        path: path.to_string(),
        source,
    };
    // Take the write lock before reading the version, so two processes creating the
    // same new store do not both run the first migration.
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(sql)?;
    let found: i64 = tx
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sql)?;
    if found > VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_string(),
            found,
            known: VERSION,
        });
    }
    for (i, step) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tx.execute_batch(step).map_err(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)
            .map_err(sql)?;
    }
    tx.commit().map_err(sql)
}
