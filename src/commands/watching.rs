//! `--watch` around a load run: the scrapers start before the engine and stop after
//! it, and their seconds are joined into the result's timeline (by the run's wall
//! clock start) with the `watch` summary beside it (diagnose's ramp joins its own:
//! `pipeline::diagnose::ramp`).

use crate::load::LoadResult;
use crate::watch::{WatchSpec, Watched, Watcher};

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
