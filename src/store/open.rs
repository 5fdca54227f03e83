//! Opening the run store: creating it (waiting for another process that is creating
//! or writing it), migrating it forward, or — for reading — opening an existing store
//! that cannot be written read-only and immutable.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use super::{schema, Store, StoreError};

/// How long opening or writing the store waits for another latscope process that
/// holds its write lock (creating it, switching it to WAL, saving a run).
pub const BUSY_WAIT: Duration = Duration::from_secs(10);

/// Whether SQLite said another connection holds the lock.
fn is_busy(e: &StoreError) -> bool {
    matches!(
        e,
        StoreError::Sqlite { source, .. } if matches!(
            source.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        )
    )
}

impl Store {
    /// Opens (creating if needed) the store at `path`, migrating it forward. Waits up
    /// to [`BUSY_WAIT`] for another process that is creating or writing the same
    /// store: switching a new database to WAL takes its lock without SQLite's busy
    /// handler, so the whole open is retried while it reports "locked".
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let shown = path.display().to_string();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let deadline = std::time::Instant::now() + BUSY_WAIT;
        let mut pause = Duration::from_millis(5);
        loop {
            match Self::try_open(path, &shown) {
                Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                other => return other,
            }
        }
    }

    fn try_open(path: &Path, shown: &str) -> Result<Store, StoreError> {
        let sql = |source| StoreError::Sqlite {
            path: shown.to_string(),
            source,
        };
        let mut conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(BUSY_WAIT).map_err(sql)?;
        // WAL lets a reader and a writer (two latscope processes) work at once, and a
        // run killed mid-write leaves the earlier runs intact.
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(sql)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(sql)?;
        schema::migrate(&mut conn, shown)?;
        Ok(Store {
            conn,
            path: shown.to_string(),
            read_only: false,
        })
    }

    /// Opens the store to read it (`runs`, `show`, `export`, `compare`, `report`):
    /// as [`Store::open`] when it can be written, else — an existing store on a
    /// read-only mount or without write permission — read-only and immutable (no WAL
    /// or lock files needed); [`Store::read_only`] then says so.
    pub fn open_to_read(path: &Path) -> Result<Store, StoreError> {
        let writable = Self::open(path);
        let Err(first) = writable else {
            return writable;
        };
        if !path.is_file() {
            return Err(first);
        }
        let shown = path.display().to_string();
        let sql = |source| StoreError::Sqlite {
            path: shown.clone(),
            source,
        };
        use rusqlite::OpenFlags;
        let uri = format!(
            "file:{}?mode=ro&immutable=1",
            uri_path(&std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()))
        );
        let conn = Connection::open_with_flags(
            uri,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
        )
        .map_err(sql)?;
        let found: i64 = match conn.query_row("PRAGMA user_version", [], |r| r.get(0)) {
            Ok(v) => v,
            // Not a database at all: the first error says why best.
            Err(_) => return Err(first),
        };
        if found > schema::VERSION {
            return Err(StoreError::NewerSchema {
                path: shown,
                found,
                known: schema::VERSION,
            });
        }
        if found < schema::VERSION {
            return Err(first);
        }
        Ok(Store {
            conn,
            path: shown,
            read_only: true,
        })
    }

    /// Whether the store was opened read-only (see [`Store::open_to_read`]).
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// The store's path as given.
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// A path as the path part of an SQLite `file:` URI (`?` and `#` escaped).
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for c in path.display().to_string().chars() {
        match c {
            '?' | '#' | '%' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}
