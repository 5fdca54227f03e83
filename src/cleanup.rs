//! What a run made on disk and removes when it ends — a disk run's test file and
//! commit log, the browser's profile — listed here too, so that a panic removes it:
//! the release binary aborts on a panic (Cargo.toml: no unwinding, ~2 MB less), which
//! runs no destructor, and the binary's panic hook calls [`remove_all`]. The owner
//! holds a [`Made`] and removes the path itself when it drops.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

static MADE: List = List::new();

/// Paths made, each under the id its [`Made`] holds.
struct List {
    paths: Mutex<Vec<(u64, PathBuf)>>,
    next: AtomicU64,
}

impl List {
    const fn new() -> List {
        List {
            paths: Mutex::new(Vec::new()),
            next: AtomicU64::new(0),
        }
    }

    fn add(&self, path: &Path) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut paths = self.paths.lock().unwrap_or_else(|e| e.into_inner());
        paths.push((id, path.to_path_buf()));
        id
    }

    fn forget(&self, id: u64) {
        let mut paths = self.paths.lock().unwrap_or_else(|e| e.into_inner());
        paths.retain(|(i, _)| *i != id);
    }

    fn remove_all(&self) {
        let Ok(mut paths) = self.paths.try_lock() else {
            return;
        };
        for (_, p) in paths.drain(..) {
            if p.is_dir() {
                let _ = std::fs::remove_dir_all(&p);
            } else {
                let _ = std::fs::remove_file(&p);
            }
        }
    }
}

/// A path on the list until this drops (its owner removes the path itself).
#[derive(Debug)]
pub struct Made(u64);

/// Lists `path` (a file or a folder) until the returned [`Made`] drops.
pub fn remember(path: &Path) -> Made {
    Made(MADE.add(path))
}

impl Drop for Made {
    fn drop(&mut self) {
        MADE.forget(self.0);
    }
}

/// Removes every path still listed: for a panic hook when the process is about to
/// abort (with unwinding the owners' destructors do it, and another thread may still
/// be using its path). Never blocks: a list held elsewhere is left as it is.
pub fn remove_all() {
    MADE.remove_all();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `remove_all` removes what is listed (a file and a folder), not what was
    /// forgotten (its owner dropped). The test's own list: the process's holds the
    /// paths of tests running beside it.
    #[test]
    fn remove_all_removes_what_is_still_listed() {
        let base = std::env::temp_dir().join(format!("latscope-cleanup-{}", std::process::id()));
        let (dir, file, kept) = (
            base.join("profile"),
            base.join("test.file"),
            base.join("kept"),
        );
        std::fs::create_dir_all(dir.join("inner")).unwrap();
        std::fs::write(&file, b"x").unwrap();
        std::fs::write(&kept, b"x").unwrap();
        let list = List::new();
        list.add(&dir);
        list.add(&file);
        let k = list.add(&kept);
        list.forget(k);
        list.remove_all();
        assert!(!dir.exists() && !file.exists());
        assert!(kept.exists());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
