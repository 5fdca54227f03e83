//! `--watch` around a load run: the scrapers start before the engine and stop after
//! it, and their seconds are joined into the result's timeline (by the run's wall
//! clock start) with the `watch` summary beside it.

use crate::cli::WatchArgs;
use crate::load::LoadResult;
use crate::usage;
use crate::watch::{WatchSpec, Watched, Watcher};

/// The scrapers for `--watch`, started now (None without `--watch`); a bad URL or
/// selector is a usage error naming the flag.
pub(crate) fn start(args: &WatchArgs) -> anyhow::Result<Option<Watcher>> {
    let spec = WatchSpec::from_flags(&args.watch, &args.watch_metric).map_err(|e| usage!("{e}"))?;
    Ok(spec.map(Watcher::start))
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
