//! Progress on stderr for the slow phases of `convert`.
//!
//! A bar appears only when stderr is a terminal, `--quiet` is off, and the
//! phase is still running after [`DELAY`]: quick runs and pipelines stay
//! silent. The bar is hidden until then, and a helper thread reveals it.

use std::io::IsTerminal;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a phase runs before its bar appears.
pub const DELAY: Duration = Duration::from_millis(400);

/// Whether progress may be drawn at all.
pub fn wanted(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// One phase's bar (or nothing, when progress is off).
pub struct Progress {
    bar: Option<ProgressBar>,
    reveal: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
}

impl Progress {
    /// A bar over `len` bytes.
    pub fn bytes(enabled: bool, len: u64, message: &'static str) -> Self {
        let style =
            ProgressStyle::with_template("{msg:>10} [{bar:30}] {binary_bytes}/{binary_total_bytes} ({eta})")
                .map(|s| s.progress_chars("=> "));
        Self::start(enabled, Some(len), message, style)
    }

    /// A spinner for a phase whose progress cannot be measured.
    pub fn spinner(enabled: bool, message: &'static str) -> Self {
        let style = ProgressStyle::with_template("{msg:>10} {spinner} {elapsed}");
        Self::start(enabled, None, message, style)
    }

    fn start(
        enabled: bool,
        len: Option<u64>,
        message: &'static str,
        style: Result<ProgressStyle, indicatif::style::TemplateError>,
    ) -> Self {
        if !enabled {
            return Self { bar: None, reveal: None };
        }
        let bar = ProgressBar::with_draw_target(len, ProgressDrawTarget::hidden());
        if let Ok(style) = style {
            bar.set_style(style);
        }
        bar.set_message(message);
        let (done, wait) = mpsc::channel::<()>();
        let shown = bar.clone();
        let handle = std::thread::spawn(move || {
            if wait.recv_timeout(DELAY) == Err(mpsc::RecvTimeoutError::Timeout) {
                shown.set_draw_target(ProgressDrawTarget::stderr());
                shown.enable_steady_tick(Duration::from_millis(120));
                let _ = wait.recv();
            }
        });
        Self { bar: Some(bar), reveal: Some((done, handle)) }
    }

    /// Adds `n` to the position.
    pub fn inc(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
        }
    }

    /// Sets the position and the length (for a phase whose length is known
    /// only once it has started).
    pub fn set(&self, position: u64, len: u64) {
        if let Some(bar) = &self.bar {
            bar.set_length(len);
            bar.set_position(position);
        }
    }

    /// Ends the phase and clears the bar.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some((done, handle)) = self.reveal.take() {
            let _ = done.send(());
            let _ = handle.join();
        }
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop();
    }
}
