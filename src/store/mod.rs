//! The run store: every probe, load, disk and diagnose run saved in SQLite so it can be
//! listed, shown again, compared and reported on later (DESIGN.md, Storage and outputs).
//!
//! A run is stored as its metadata, the configuration it ran with, the environment
//! (host, CPU, kernel), its summary (the kind's `--json` document), its timeline, its
//! findings, the terminal text it printed, and its HdrHistograms serialised in the V2
//! deflate format so other HdrHistogram tools can read them. Every write is one
//! transaction; the schema is versioned (`PRAGMA user_version`) and migrates forward.
//! This module stores and loads; it never prints.

pub mod export;
mod open;
mod schema;

use std::path::PathBuf;

use rusqlite::{params, Connection, OptionalExtension};

pub use export::{ExportFile, ImportedRun, FORMAT_NAME};
pub use open::BUSY_WAIT;
// The record, its histograms and redaction live in leaf modules that results,
// reports and outputs may import; the store re-exports them for its own callers.
pub use crate::record::{measured, Environment, RunListing, RunRecord};
pub use crate::redact::{
    is_secret_header, redact_json, redact_record, redact_text, redact_urls, redact_value,
    SECRET_HEADERS, SECRET_HEADER_SUFFIXES, SECRET_QUERY_PARAMS, SECRET_QUERY_SUFFIXES,
};
pub use crate::stats::{v2, StoredHistogram};

/// Version of the portable export format.
pub const EXPORT_FORMAT: u32 = 1;

/// Filters for [`Store::list`].
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub kind: Option<String>,
    pub label: Option<String>,
    /// Substring of the target.
    pub target: Option<String>,
    /// Only the newest N.
    pub last: Option<usize>,
}

/// What can go wrong with the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("run store {path}: {source}")]
    Sqlite {
        path: String,
        source: rusqlite::Error,
    },
    #[error("cannot create the directory for the run store {path}: {source}")]
    Dir {
        path: String,
        source: std::io::Error,
    },
    #[error("run store {path} was written by a newer latscope (schema {found}, this one knows up to {known}); upgrade latscope or use another --db")]
    NewerSchema {
        path: String,
        found: i64,
        known: i64,
    },
    #[error("no run matches '{0}' (try `latscope runs`)")]
    NotFound(String),
    #[error("'{0}' matches several runs: {1}; give more of the id")]
    Ambiguous(String, String),
    #[error("a run with id {0} is already in the store")]
    Duplicate(String),
    #[error("stored run {id} is damaged: {reason}")]
    Damaged { id: String, reason: String },
}

/// The default store path: `$XDG_DATA_HOME/latscope/runs.db`, else
/// `~/.local/share/latscope/runs.db`.
pub fn default_path() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("latscope").join("runs.db")
}

/// An open run store.
pub struct Store {
    conn: Connection,
    path: String,
    read_only: bool,
}

impl Store {
    fn sql(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |source| StoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    /// Saves a run in one transaction. Assigns an id when the record has none;
    /// returns the id.
    pub fn save(&mut self, run: &RunRecord) -> Result<String, StoreError> {
        self.save_text(
            run,
            [
                run.config.to_string(),
                serde_json::to_string(&run.env).unwrap_or_default(),
                run.summary.to_string(),
                run.timeline.to_string(),
                run.findings.to_string(),
                headline(&run.kind, &run.summary).to_string(),
            ],
            &run.histograms,
        )
    }

    /// Deletes the runs labelled `label` that started before `before_ms` (ms since
    /// the epoch), their histograms with them, keeping at least the newest
    /// `keep_newest` of them whatever their age; returns how many went. `latscope
    /// serve`'s retention.
    pub fn prune(
        &mut self,
        label: &str,
        before_ms: i64,
        keep_newest: usize,
    ) -> Result<usize, StoreError> {
        let sql = self.sql();
        let n = self
            .conn
            .execute(
                "DELETE FROM runs WHERE label = ?1 AND started_at_ms < ?2 AND id NOT IN
                   (SELECT id FROM runs WHERE label = ?1 ORDER BY started_at_ms DESC LIMIT ?3)",
                rusqlite::params![label, before_ms, keep_newest as i64],
            )
            .map_err(sql)?;
        Ok(n)
    }

    /// The bytes the store's pages hold (its file less its free pages): what deleting
    /// runs brings down, at once, without reading a run.
    pub fn used_bytes(&self) -> Result<u64, StoreError> {
        let pragma = |name: &str| -> Result<i64, StoreError> {
            self.conn
                .query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
                .map_err(self.sql())
        };
        let used = (pragma("page_count")? - pragma("freelist_count")?).max(0);
        Ok(used as u64 * pragma("page_size")?.max(0) as u64)
    }

    /// Deletes the `n` oldest runs whose label starts with `prefix` (exactly: case and
    /// every character as given), never the newest run of a label; returns how many
    /// went. `latscope serve`'s size cap.
    pub fn prune_oldest(&mut self, prefix: &str, n: usize) -> Result<usize, StoreError> {
        let sql = self.sql();
        let gone = self
            .conn
            .execute(
                "DELETE FROM runs WHERE id IN (
                   SELECT r.id FROM runs r
                   WHERE substr(r.label, 1, length(?1)) = ?1
                     AND r.started_at_ms < (SELECT MAX(started_at_ms) FROM runs x WHERE x.label = r.label)
                   ORDER BY r.started_at_ms LIMIT ?2)",
                rusqlite::params![prefix, n as i64],
            )
            .map_err(sql)?;
        Ok(gone)
    }

    /// Saves an imported run (already checked and redacted), in one transaction:
    /// its documents are written out one at a time, each dropped once it is stored,
    /// so a large run is never held as text and documents at once.
    pub fn save_imported(&mut self, run: export::ImportedRun) -> Result<String, StoreError> {
        let export::ImportedRun {
            id,
            kind,
            label,
            target,
            started_at_ms,
            duration_s,
            version,
            config,
            env,
            summary,
            timeline,
            findings,
            text,
            histograms,
        } = run;
        let headline = summary.headline().to_string();
        let meta = RunRecord {
            id,
            kind,
            label,
            target,
            started_at_ms,
            duration_s,
            version,
            config: serde_json::Value::Null,
            env,
            summary: serde_json::Value::Null,
            timeline: serde_json::Value::Null,
            findings: serde_json::Value::Null,
            text,
            histograms: Vec::new(),
        };
        let env = serde_json::to_string(&meta.env).unwrap_or_default();
        let placeholder = || "null".to_string();
        let mut parts: Vec<(&str, Box<dyn erased::Json>)> = vec![
            ("summary", Box::new(summary)),
            ("timeline", Box::new(timeline)),
            ("config", Box::new(config)),
            ("findings", Box::new(findings)),
        ];
        self.save_with(
            &meta,
            [
                placeholder(),
                env,
                placeholder(),
                placeholder(),
                placeholder(),
                headline,
            ],
            &histograms,
            |tx, id| {
                for (column, part) in parts.drain(..) {
                    let text = part.json();
                    drop(part);
                    tx.execute(
                        &format!("UPDATE runs SET {column} = ?1 WHERE id = ?2"),
                        params![text, id],
                    )?;
                }
                Ok(())
            },
        )
    }

    /// Saves `run`'s metadata and text with its documents already as text:
    /// config, env, summary, timeline, findings, headline.
    fn save_text(
        &mut self,
        run: &RunRecord,
        json: [String; 6],
        histograms: &[StoredHistogram],
    ) -> Result<String, StoreError> {
        self.save_with(run, json, histograms, |_, _| Ok(()))
    }

    /// [`Store::save_text`], then `more` in the same transaction.
    fn save_with(
        &mut self,
        run: &RunRecord,
        json: [String; 6],
        histograms: &[StoredHistogram],
        more: impl FnOnce(&rusqlite::Transaction<'_>, &str) -> rusqlite::Result<()>,
    ) -> Result<String, StoreError> {
        let id = if run.id.is_empty() {
            new_id()
        } else {
            run.id.clone()
        };
        let path = self.path.clone();
        let sql = move |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(&sql)?;
        let exists: Option<String> = tx
            .query_row("SELECT id FROM runs WHERE id = ?1", [&id], |r| r.get(0))
            .optional()
            .map_err(&sql)?;
        if exists.is_some() {
            return Err(StoreError::Duplicate(id));
        }
        let [config, env, summary, timeline, findings, headline] = json;
        tx.execute(
            "INSERT INTO runs (id, kind, label, target, started_at_ms, duration_s, version,
                               config, env, summary, timeline, findings, text, headline)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                id,
                run.kind,
                run.label,
                run.target,
                run.started_at_ms,
                run.duration_s,
                run.version,
                config,
                env,
                summary,
                timeline,
                findings,
                run.text,
                headline,
            ],
        )
        .map_err(&sql)?;
        {
            let mut stmt = tx
                .prepare(
                    "INSERT INTO histograms (run_id, name, second, v2) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(&sql)?;
            for h in histograms {
                stmt.execute(params![id, h.name, h.second, h.v2])
                    .map_err(&sql)?;
            }
        }
        more(&tx, &id).map_err(&sql)?;
        tx.commit().map_err(&sql)?;
        Ok(id)
    }

    /// Lists runs, newest first.
    pub fn list(&self, filter: &ListFilter) -> Result<Vec<RunListing>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, kind, label, target, started_at_ms, duration_s, headline FROM runs
                 WHERE (?1 IS NULL OR kind = ?1)
                   AND (?2 IS NULL OR label = ?2)
                   AND (?3 IS NULL OR instr(target, ?3) > 0)
                 ORDER BY started_at_ms DESC, rowid DESC
                 LIMIT ?4",
            )
            .map_err(self.sql())?;
        let limit = filter.last.map(|n| n as i64).unwrap_or(-1);
        let rows = stmt
            .query_map(
                params![filter.kind, filter.label, filter.target, limit],
                |r| {
                    Ok(RunListing {
                        id: r.get(0)?,
                        kind: r.get(1)?,
                        label: r.get(2)?,
                        target: r.get(3)?,
                        started_at_ms: r.get(4)?,
                        duration_s: r.get(5)?,
                        headline: serde_json::from_str(&r.get::<_, String>(6)?).unwrap_or_default(),
                    })
                },
            )
            .map_err(self.sql())?;
        rows.collect::<Result<_, _>>().map_err(self.sql())
    }

    /// Finds the id a RUN argument names: an id, a unique id prefix, a label (the
    /// newest run with it), or `last` / `last~N`.
    pub fn resolve(&self, spec: &str) -> Result<String, StoreError> {
        let spec = spec.trim();
        if let Some(back) = parse_last(spec) {
            return self
                .conn
                .query_row(
                    "SELECT id FROM runs ORDER BY started_at_ms DESC, rowid DESC LIMIT 1 OFFSET ?1",
                    [back as i64],
                    |r| r.get(0),
                )
                .optional()
                .map_err(self.sql())?
                .ok_or_else(|| StoreError::NotFound(spec.to_string()));
        }
        let exact: Option<String> = self
            .conn
            .query_row("SELECT id FROM runs WHERE id = ?1", [spec], |r| r.get(0))
            .optional()
            .map_err(self.sql())?;
        if let Some(id) = exact {
            return Ok(id);
        }
        let by_label: Option<String> = self
            .conn
            .query_row(
                "SELECT id FROM runs WHERE label = ?1 ORDER BY started_at_ms DESC, rowid DESC LIMIT 1",
                [spec],
                |r| r.get(0),
            )
            .optional()
            .map_err(self.sql())?;
        if let Some(id) = by_label {
            return Ok(id);
        }
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM runs WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id LIMIT 6")
            .map_err(self.sql())?;
        let ids: Vec<String> = stmt
            .query_map([spec], |r| r.get(0))
            .map_err(self.sql())?
            .collect::<Result<_, _>>()
            .map_err(self.sql())?;
        match ids.len() {
            0 => Err(StoreError::NotFound(spec.to_string())),
            1 => Ok(ids.into_iter().next().unwrap_or_default()),
            _ => Err(StoreError::Ambiguous(spec.to_string(), ids.join(", "))),
        }
    }

    /// Loads a whole run by id (see [`Store::resolve`]).
    pub fn load(&self, id: &str) -> Result<RunRecord, StoreError> {
        let damaged = |reason: String| StoreError::Damaged {
            id: id.to_string(),
            reason,
        };
        let row = self
            .conn
            .query_row(
                "SELECT id, kind, label, target, started_at_ms, duration_s, version, config, env,
                        summary, timeline, findings, text FROM runs WHERE id = ?1",
                [id],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, Option<String>>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, i64>(4)?,
                        r.get::<_, f64>(5)?,
                        r.get::<_, String>(6)?,
                        [
                            r.get::<_, String>(7)?,
                            r.get::<_, String>(8)?,
                            r.get::<_, String>(9)?,
                            r.get::<_, String>(10)?,
                            r.get::<_, String>(11)?,
                        ],
                        r.get::<_, String>(12)?,
                    ))
                },
            )
            .optional()
            .map_err(self.sql())?
            .ok_or_else(|| StoreError::NotFound(id.to_string()))?;
        let (id, kind, label, target, started_at_ms, duration_s, version, json, text) = row;
        let parse = |s: &str| {
            serde_json::from_str::<serde_json::Value>(s).map_err(|e| damaged(e.to_string()))
        };
        let env: Environment =
            serde_json::from_str(&json[1]).map_err(|e| damaged(e.to_string()))?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT name, second, v2 FROM histograms WHERE run_id = ?1 ORDER BY name, second",
            )
            .map_err(self.sql())?;
        let histograms = stmt
            .query_map([&id], |r| {
                Ok(StoredHistogram {
                    name: r.get(0)?,
                    second: r.get(1)?,
                    v2: r.get(2)?,
                })
            })
            .map_err(self.sql())?
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.sql())?;
        Ok(RunRecord {
            config: parse(&json[0])?,
            env,
            summary: parse(&json[2])?,
            timeline: parse(&json[3])?,
            findings: parse(&json[4])?,
            id,
            kind,
            label,
            target,
            started_at_ms,
            duration_s,
            version,
            text,
            histograms,
        })
    }
}

/// `last` → 0, `last~N` → N.
fn parse_last(spec: &str) -> Option<usize> {
    if spec == "last" {
        return Some(0);
    }
    spec.strip_prefix("last~").and_then(|n| n.parse().ok())
}

/// A new random run id: 10 hex digits.
pub fn new_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded from the OS once per process; mixing in the time and a
    // counter makes every call differ.
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    format!("{:010x}", h.finish() & 0xff_ffff_ffff)
}

/// The headline numbers of a run, picked from its summary for `latscope runs`.
pub fn headline(kind: &str, summary: &serde_json::Value) -> serde_json::Value {
    crate::schema::headline(kind, summary)
}

/// A document written as JSON text, whatever its type.
mod erased {
    pub trait Json {
        fn json(&self) -> String;
    }

    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> String {
            serde_json::to_string(self).unwrap_or_else(|_| "null".into())
        }
    }
}

#[cfg(test)]
mod tests;
