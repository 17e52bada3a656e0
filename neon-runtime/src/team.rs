//! A persistent worker team (feature `std`): threads created once, reused by every dispatch.
//!
//! [`Team::new(n)`](Team::new) starts `n - 1` worker threads; the thread that calls
//! [`Team::run`] is the team's first member, so `n` threads work on each dispatch and a team of
//! one runs everything inline. A dispatch hands out task indices `0..tasks`; each task runs once,
//! on some member, and is told the index of the member running it (`worker < n`) so it can use
//! that member's scratch. Which member runs which task is not fixed: results stay the same for
//! any thread count only if the tasks write disjoint outputs and each task's result depends on
//! its index alone. The kernel drivers partition that way (output rows or columns in whole
//! micro-kernel tiles, never a reduction).
//!
//! - **No allocation per dispatch.** The job is a borrowed closure; the caller waits until every
//!   member has finished with it, so it never outlives the call.
//! - **Idle workers park** on a condition variable. With [`TeamOptions::spin`] they first poll for
//!   a new dispatch for a short while (about [`SPIN_ROUNDS`] polls), which saves the wake-up
//!   latency between the back-to-back dispatches of one model step. Instruction counting under
//!   qemu wants `spin: false`: a parked thread executes nothing, so counts stay deterministic.
//! - **A panicking task is an error.** Every task runs under `catch_unwind`; the dispatch still
//!   waits for all members, then returns [`Error::Team`] with [`TeamError::Panicked`]. The
//!   team stays usable (the panic is not re-raised and no thread dies).
//! - **One dispatch at a time.** Concurrent callers of one team take turns (a lock around the
//!   dispatch); callers that want to run at the same time each own a team. A task must not
//!   dispatch on the team that runs it ([`TeamError::Nested`] instead of a deadlock).
//! - **Drop joins** the worker threads.
//!
//! A team is `Send + Sync`; compiled plans and models borrow a caller-owned `&Team`.

use core::cell::Cell;
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::vec::Vec;

use crate::error::{Error, TeamError};

/// How long an idle worker polls for the next dispatch before it parks, in polls of the
/// dispatch counter (each a load and a spin-loop hint: a few microseconds in all on the
/// boards we target, short against a model step, long against the gap between two of its
/// operators).
pub const SPIN_ROUNDS: u32 = 1 << 14;

/// How a [`Team`] behaves when idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TeamOptions {
    /// Poll for [`SPIN_ROUNDS`] rounds before parking (default). Off for deterministic
    /// instruction counts: parked threads execute nothing.
    pub spin: bool,
}

impl Default for TeamOptions {
    fn default() -> Self {
        Self { spin: true }
    }
}

/// The closure of one dispatch with its lifetime erased (see [`Team::run`] for why the
/// erasure is sound): called as `f(task, worker)`.
type JobFn = dyn Fn(usize, usize) + Sync;

/// What the members read for the current dispatch.
#[derive(Clone, Copy)]
struct Job {
    f: *const JobFn,
    tasks: usize,
    /// Workers (not counting the caller) that take part: the first `helpers` of them.
    helpers: usize,
}

/// The dispatch state behind the mutex.
struct State {
    /// Incremented by every dispatch; a worker runs each generation at most once.
    generation: u64,
    job: Option<Job>,
    /// Helpers of the current dispatch that have not finished it yet.
    running: usize,
    shutdown: bool,
}

// SAFETY: `Job::f` points to a `Sync` closure that `Team::run` keeps alive until every
// helper has finished the dispatch (it waits for `running == 0` before it returns), so
// sending the pointer to the worker threads is sound.
unsafe impl Send for State {}

/// What the caller and the workers share.
struct Shared {
    state: Mutex<State>,
    /// Workers wait here for a new generation.
    wake: Condvar,
    /// The caller waits here for `running == 0`.
    done: Condvar,
    /// Mirrors `State::generation` for the lock-free spin.
    generation: AtomicU64,
    /// The next task index of the current dispatch.
    next: AtomicUsize,
    /// Whether a task of the current dispatch panicked.
    panicked: AtomicBool,
    spin: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Tasks never run under this lock, so it cannot be poisoned by them; recover anyway.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs tasks of `job` until none is left, as member `worker`.
    fn work(&self, job: Job, worker: usize) {
        // SAFETY: see `State`'s `Send`: the closure outlives the dispatch.
        let f = unsafe { &*job.f };
        let _inside = Inside::enter(self);
        loop {
            let task = self.next.fetch_add(1, Ordering::Relaxed);
            if task >= job.tasks {
                break;
            }
            if catch_unwind(AssertUnwindSafe(|| f(task, worker))).is_err() {
                self.panicked.store(true, Ordering::Relaxed);
            }
        }
    }
}

std::thread_local! {
    /// The team whose task this thread is running (its `Shared` address), or 0.
    static INSIDE: Cell<usize> = const { Cell::new(0) };
}

/// Marks this thread as running a task of one team while alive.
struct Inside(usize);

impl Inside {
    fn enter(shared: &Shared) -> Self {
        let before = INSIDE.with(|c| c.replace(shared as *const Shared as usize));
        Inside(before)
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.with(|c| c.set(self.0));
    }
}

/// A persistent team of `threads` members: the caller of [`Team::run`] and
/// `threads - 1` worker threads. See the [module docs](self) for the contract.
pub struct Team {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    /// Serialises dispatches from concurrent callers.
    dispatch: Mutex<()>,
}

impl fmt::Debug for Team {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Team").field("threads", &self.threads()).finish()
    }
}

impl Team {
    /// A team of `threads` members (`threads - 1` new threads) with the default options.
    ///
    /// # Errors
    /// [`TeamError::NoThreads`] for `threads == 0`; [`TeamError::Spawn`] when the OS refuses
    /// a thread (the threads already started are joined).
    pub fn new(threads: usize) -> Result<Self, Error> {
        Self::with_options(threads, TeamOptions::default())
    }

    /// A serial team: one member, no threads; [`Team::run`] runs every task inline.
    pub fn serial() -> Self {
        Self::with_options(1, TeamOptions::default()).expect("a serial team starts no thread")
    }

    /// A team of `threads` members with `options`.
    ///
    /// # Errors
    /// As [`Team::new`].
    pub fn with_options(threads: usize, options: TeamOptions) -> Result<Self, Error> {
        if threads == 0 {
            return Err(Error::Team(TeamError::NoThreads));
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State { generation: 0, job: None, running: 0, shutdown: false }),
            wake: Condvar::new(),
            done: Condvar::new(),
            generation: AtomicU64::new(0),
            next: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            spin: options.spin,
        });
        let mut team =
            Team { shared, workers: Vec::with_capacity(threads - 1), dispatch: Mutex::new(()) };
        for index in 1..threads {
            let shared = Arc::clone(&team.shared);
            let spawned = thread::Builder::new()
                .name(std::format!("neon-worker-{index}"))
                .spawn(move || worker_loop(&shared, index));
            match spawned {
                Ok(handle) => team.workers.push(handle),
                // Dropping `team` joins the workers started so far.
                Err(_) => return Err(Error::Team(TeamError::Spawn)),
            }
        }
        Ok(team)
    }

    /// Members, the caller included (`>= 1`).
    pub fn threads(&self) -> usize {
        self.workers.len() + 1
    }

    /// Runs `f(task, worker)` once for every `task < tasks`, spread over the members
    /// (`worker < self.threads()` names the member running it: 0 is the caller), and returns
    /// when all have finished. Allocates nothing. With one member, or one task, everything runs
    /// inline on the caller.
    ///
    /// # Errors
    /// [`TeamError::Panicked`] when a task panicked (the other tasks still ran; the team stays
    /// usable); [`TeamError::Nested`] when called from inside a task of this team.
    pub fn run(&self, tasks: usize, f: &(dyn Fn(usize, usize) + Sync)) -> Result<(), Error> {
        let shared = &*self.shared;
        if INSIDE.with(Cell::get) == shared as *const Shared as usize {
            return Err(Error::Team(TeamError::Nested));
        }
        if tasks == 0 {
            return Ok(());
        }
        let _turn = self.dispatch.lock().unwrap_or_else(PoisonError::into_inner);
        shared.panicked.store(false, Ordering::Relaxed);
        shared.next.store(0, Ordering::Relaxed);
        let helpers = self.workers.len().min(tasks - 1);
        // SAFETY (lifetime erasure): the pointer is only dereferenced by members running this
        // dispatch, and this function does not return before `running` is back to 0, i.e.
        // before every helper has finished with it.
        let f: *const JobFn = unsafe {
            core::mem::transmute::<*const (dyn Fn(usize, usize) + Sync + '_), *const JobFn>(f)
        };
        let job = Job { f, tasks, helpers };
        if helpers > 0 {
            let mut state = shared.lock();
            state.generation += 1;
            state.job = Some(job);
            state.running = helpers;
            shared.generation.store(state.generation, Ordering::Release);
            drop(state);
            shared.wake.notify_all();
        }
        shared.work(job, 0);
        if helpers > 0 {
            let mut state = shared.lock();
            while state.running > 0 {
                state = shared.done.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
            state.job = None;
        }
        if shared.panicked.load(Ordering::Relaxed) {
            return Err(Error::Team(TeamError::Panicked));
        }
        Ok(())
    }
}

/// A worker thread: waits for each new generation, works on it if it is one of its helpers,
/// reports completion; exits on shutdown.
fn worker_loop(shared: &Shared, index: usize) {
    let mut seen = 0u64;
    loop {
        if shared.spin {
            for _ in 0..SPIN_ROUNDS {
                if shared.generation.load(Ordering::Acquire) != seen {
                    break;
                }
                core::hint::spin_loop();
            }
        }
        let mut state = shared.lock();
        while state.generation == seen && !state.shutdown {
            state = shared.wake.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        if state.shutdown {
            return;
        }
        seen = state.generation;
        let job = match state.job {
            Some(job) if index <= job.helpers => job,
            _ => continue,
        };
        drop(state);
        shared.work(job, index);
        let mut state = shared.lock();
        state.running -= 1;
        if state.running == 0 {
            shared.done.notify_one();
        }
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.shared.lock().shutdown = true;
        self.shared.wake.notify_all();
        for handle in self.workers.drain(..) {
            // A worker never panics outside `catch_unwind`; nothing to report if it did.
            let _ = handle.join();
        }
    }
}

impl crate::kernels::Parallel for Team {
    fn workers(&self) -> usize {
        self.threads()
    }

    fn dispatch(&self, tasks: usize, f: &(dyn Fn(usize, usize) + Sync)) -> Result<(), Error> {
        self.run(tasks, f)
    }
}
