//! Temporary files and directories removed on SIGINT and SIGTERM.
//!
//! Drop handlers remove them on success, on error and on panic, but a signal
//! ends the process without running any: the handler installed here removes
//! whatever is still registered, then exits with the shell's status for an
//! interrupt (130).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

static REGISTERED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Installs the handler (once, at start-up). A failure to install leaves the
/// default behaviour, which only risks leftovers: not worth refusing to run.
pub fn install() {
    let _ = ctrlc::set_handler(|| {
        let paths = match REGISTERED.lock() {
            Ok(paths) => paths.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        for path in paths.iter().rev() {
            let _ = std::fs::remove_dir_all(path).or_else(|_| std::fs::remove_file(path));
        }
        std::process::exit(130);
    });
}

/// Registers a temporary path until the guard is dropped.
pub fn register(path: &Path) -> Guard {
    if let Ok(mut paths) = REGISTERED.lock() {
        paths.push(path.to_path_buf());
    }
    Guard(path.to_path_buf())
}

/// Keeps a path registered while alive.
#[derive(Debug)]
pub struct Guard(PathBuf);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(mut paths) = REGISTERED.lock() {
            if let Some(i) = paths.iter().rposition(|p| *p == self.0) {
                paths.remove(i);
            }
        }
    }
}
