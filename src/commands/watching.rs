//! `--watch` around a load run: the scrapers start before the engine and stop after
//! it, and their seconds are joined into the result's timeline (by the run's wall
//! clock start) with the `watch` summary beside it; for diagnose's ramp, into the
//! joined timeline of its steps.

use crate::diagnose::diagnosis::Ramp;
use crate::load::LoadResult;
use crate::watch::{ServerSecond, WatchSpec, Watched, Watcher};

/// The scrapers for `--watch`, started now (None without `--watch`).
pub(crate) fn start(spec: &Option<WatchSpec>) -> Option<Watcher> {
    spec.clone().map(Watcher::start)
}

/// Stops the scrapers and joins what they saw to `result`'s timeline.
pub(crate) fn attach(watcher: Option<Watcher>, result: &mut LoadResult) {
    if let Some(w) = watcher {
        join(&w.finish(), result);
    }
}

/// Joins scrapes to a result's timeline and sets its `watch` summary.
pub(crate) fn join(watched: &Watched, result: &mut LoadResult) {
    let seconds = watched.seconds(result.started, result.timeline.len());
    result.watch = Some(watched.summary(&seconds));
    for (s, server) in result.timeline.iter_mut().zip(seconds) {
        s.server = server;
    }
}

/// Joins scrapes to the diagnose ramp's joined timeline (facts and JSON rows) and
/// sets the `watch` summary of its `load` object.
pub(crate) fn join_ramp(watched: &Watched, ramp: &mut Ramp) {
    let mut joined: Vec<Option<ServerSecond>> = Vec::new();
    for &(started, n, offset, whole) in &ramp.spans {
        for (t, s) in watched.seconds(started, n).into_iter().enumerate() {
            let at = (offset + (t as u32).min(whole.max(1) - 1)) as usize;
            if joined.len() <= at {
                joined.resize(at + 1, None);
            }
            if joined[at].is_none() {
                joined[at] = s;
            }
        }
    }
    for s in &mut ramp.facts.timeline {
        s.server = joined.get(s.t as usize).cloned().flatten();
    }
    for row in &mut ramp.timeline {
        row.watched = true;
        row.second.server = joined.get(row.second.t as usize).cloned().flatten();
    }
    ramp.watch = Some(watched.summary(&joined));
}

/// `p` with the `--watch` server rows scraped so far put into its seconds (`rows`
/// indexed by second), for what watches a run live (the view, `--out`).
pub(crate) fn with_server(
    p: &crate::load::Progress,
    rows: &[Option<crate::watch::ServerSecond>],
) -> crate::load::Progress {
    let mut p = p.clone();
    for s in &mut p.seconds {
        s.second.server = rows.get(s.second.t as usize).cloned().flatten();
    }
    p
}
