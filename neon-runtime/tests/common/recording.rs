//! A parallel context that records the largest task count it was asked to run, so a test
//! can prove that its shapes really were split on a team.

use neon_runtime::{Error, Parallel};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs every dispatch on `inner` and records its largest task count.
pub struct Recording {
    pub inner: Box<dyn Parallel>,
    pub max_tasks: AtomicUsize,
}

impl Recording {
    pub fn new(inner: Box<dyn Parallel>) -> Self {
        Recording { inner, max_tasks: AtomicUsize::new(0) }
    }

    /// The largest task count dispatched so far.
    pub fn max_tasks(&self) -> usize {
        self.max_tasks.load(Ordering::Relaxed)
    }

    pub fn as_ref(&self) -> &dyn Parallel {
        self
    }
}

impl Parallel for Recording {
    fn workers(&self) -> usize {
        self.inner.workers()
    }

    fn dispatch(&self, tasks: usize, f: &(dyn Fn(usize, usize) + Sync)) -> Result<(), Error> {
        self.max_tasks.fetch_max(tasks, Ordering::Relaxed);
        self.inner.dispatch(tasks, f)
    }
}
