//! A panic inside the parquet crate, contained as an error.
//!
//! The crate's low-level reader is not total on malformed input: a mutated
//! file can reach an `assert!` or an `expect` in it (a data page that names
//! a dictionary encoding in a column chunk without a dictionary page, for
//! one; our mutation runs found two such places in 59.3). The calls into it
//! therefore go through [`contain`], which turns such a panic into the
//! file's error instead of a crash, and keeps the default panic message off
//! stderr while it does. Panics anywhere else are reported as usual.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// Whether this thread is inside [`contain`].
    static CONTAINING: Cell<bool> = const { Cell::new(false) };
    /// The message of the panic [`contain`] caught.
    static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `f` (a call into the parquet crate); a panic in it becomes `Err`
/// with the panic's message and where it happened.
pub fn contain<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CONTAINING.with(Cell::get) {
                let at = info.location().map(|l| format!(" at {}:{}", short(l.file()), l.line()));
                let message = format!("{}{}", payload_text(info.payload()), at.unwrap_or_default());
                CAUGHT.with(|c| *c.borrow_mut() = Some(message));
            } else {
                previous(info);
            }
        }));
    });
    CONTAINING.with(|c| c.set(true));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CONTAINING.with(|c| c.set(false));
    result.map_err(|payload| {
        let message = CAUGHT.with(|c| c.borrow_mut().take()).unwrap_or_else(|| payload_text(&*payload));
        format!("the parquet crate's reader failed on this file ({message})")
    })
}

fn payload_text(payload: &(dyn Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(text), _) => (*text).to_owned(),
        (_, Some(text)) => text.clone(),
        _ => "a panic".to_owned(),
    }
}

/// A source path from the crate's own directory on (`parquet-59.3.3/src/...`).
fn short(file: &str) -> &str {
    file.rfind("/parquet-").map_or(file, |i| &file[i + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_and_the_next_call_works() {
        let caught = contain(|| -> u32 { panic!("column start and length should not be negative") });
        let message = caught.unwrap_err();
        assert!(message.contains("reader failed on this file (column start and length"), "{message}");
        assert_eq!(contain(|| 7), Ok(7));
    }
}
