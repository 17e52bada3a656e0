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
//! - **No lock on the fast path.** A dispatch is published through atomics (a sequence lock
//!   on the generation counter) and its completion counted in an atomic, so when the
//!   members are polling, a dispatch costs a few cache-line transfers and no system call;
//!   the mutex and condition variables serve only members that parked.
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
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
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
}

/// What the caller and the workers share. A dispatch is published without a lock, as a
/// sequence lock: `generation` is odd while the caller writes the job fields and even once
/// they are complete; a member reads the fields between two loads of `generation` and uses
/// them only when both loads agree on an even value. The mutex and the condition variables
/// are used only to park and wake members that stopped polling (`sleepers`,
/// `caller_parked`). Each wake-up is a handshake of two sides that each write one flag and
/// then read the other's (`generation` then `sleepers` against `sleepers` then
/// `generation`; `caller_parked` then `running` against `running` then `caller_parked`), so
/// one of them always sees the other and a wake-up is never lost. Every write of such a
/// pair is a read-modify-write (`swap`, `fetch_add`, `fetch_sub`), not a plain store:
/// `SeqCst` forbids a plain store and a later load from passing each other, and aarch64
/// hardware keeps that order (`stlr` then `ldar`), but qemu-user on x86-64 hosts does not:
/// there a store-then-load handshake can see neither side's write, so a wake-up is lost and
/// the team hangs, while with `swap` one side always sees the other (`BENCHMARKS.md`,
/// "Method: instructions executed on aarch64"). A read-modify-write is ordered everywhere
/// and costs one more atomic per dispatch.
struct Shared {
    /// Guards parking only (no data).
    park: Mutex<()>,
    /// Workers wait here for a new generation.
    wake: Condvar,
    /// The caller waits here for `running == 0`.
    done: Condvar,
    generation: AtomicU64,
    /// The job of the current generation: a pointer to the caller's erased closure pointer
    /// (which lives on the caller's stack until the dispatch ends), the task count and the
    /// helper count.
    job_f: AtomicPtr<*const JobFn>,
    job_tasks: AtomicUsize,
    job_helpers: AtomicUsize,
    /// Helpers of the current dispatch that have not finished it yet.
    running: AtomicUsize,
    /// Workers parked (or about to park) on `wake`.
    sleepers: AtomicUsize,
    /// Whether the caller parked (or is about to park) on `done`.
    caller_parked: AtomicBool,
    shutdown: AtomicBool,
    /// The next task index of the current dispatch.
    next: AtomicUsize,
    /// Whether a task of the current dispatch panicked.
    panicked: AtomicBool,
    spin: bool,
}

// SAFETY: the raw pointers in `job_f` point to the caller's erased closure pointer, which
// `Team::run` keeps alive until every helper has finished the dispatch (it waits for
// `running == 0` before it returns), and the closure is `Sync`; members only dereference it
// for a generation they take part in.
unsafe impl Send for Shared {}
// SAFETY: as for `Send`; every field is an atomic or a synchronisation primitive.
unsafe impl Sync for Shared {}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, ()> {
        // Nothing runs under this lock but parking, so it cannot be poisoned; recover anyway.
        self.park.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What generation `g` (even) asks of worker `index`: `None` when the fields read do
    /// not all belong to `g` (a newer dispatch is being published: read again), else
    /// whether it takes part (`Some(None)`: not a helper of `g`, or `g` is over).
    fn job(&self, g: u64, index: usize) -> Option<Option<Job>> {
        let slot = self.job_f.load(Ordering::SeqCst);
        let tasks = self.job_tasks.load(Ordering::SeqCst);
        let helpers = self.job_helpers.load(Ordering::SeqCst);
        if self.generation.load(Ordering::SeqCst) != g {
            return None;
        }
        if slot.is_null() || index > helpers {
            return Some(None);
        }
        // SAFETY: the fields are generation `g`'s and this worker is one of its helpers, so
        // the caller waits for it (`running`) before its closure pointer, `*slot`, goes
        // away (see `Shared`'s `Send`).
        let f = unsafe { *slot };
        Some(Some(Job { f, tasks }))
    }

    /// Runs tasks of `job` until none is left, as member `worker`.
    fn work(&self, job: Job, worker: usize) {
        // SAFETY: see `Shared`'s `Send`: the closure outlives the dispatch.
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

    /// Wakes the parked workers, if any (after a new generation or shutdown was stored).
    fn wake_workers(&self) {
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            // Taking the lock waits for a worker between its check and its wait.
            drop(self.lock());
            self.wake.notify_all();
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
            park: Mutex::new(()),
            wake: Condvar::new(),
            done: Condvar::new(),
            generation: AtomicU64::new(0),
            job_f: AtomicPtr::new(core::ptr::null_mut()),
            job_tasks: AtomicUsize::new(0),
            job_helpers: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            caller_parked: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
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
        let helpers = self.workers.len().min(tasks - 1);
        // SAFETY (lifetime erasure): the pointer is only dereferenced by members running this
        // dispatch, and this function does not return before `running` is back to 0, i.e.
        // before every helper has finished with it.
        let f: *const JobFn = unsafe {
            core::mem::transmute::<*const (dyn Fn(usize, usize) + Sync + '_), *const JobFn>(f)
        };
        let job = Job { f, tasks };
        shared.panicked.store(false, Ordering::Relaxed);
        if helpers == 0 {
            shared.next.store(0, Ordering::Relaxed);
            shared.work(job, 0);
        } else {
            // Publish: odd generation, the fields, even generation (see `Shared`).
            let g = shared.generation.fetch_add(1, Ordering::SeqCst) + 1;
            let slot = &f as *const *const JobFn;
            shared.job_f.store(slot.cast_mut(), Ordering::SeqCst);
            shared.job_tasks.store(tasks, Ordering::SeqCst);
            shared.job_helpers.store(helpers, Ordering::SeqCst);
            shared.next.store(0, Ordering::SeqCst);
            shared.running.store(helpers, Ordering::SeqCst);
            // A read-modify-write, not a store: `wake_workers` reads `sleepers` next (see
            // `Shared`).
            shared.generation.swap(g + 1, Ordering::SeqCst);
            shared.wake_workers();
            shared.work(job, 0);
            self.wait_for_helpers();
            shared.job_f.store(core::ptr::null_mut(), Ordering::SeqCst);
        }
        if shared.panicked.load(Ordering::Relaxed) {
            return Err(Error::Team(TeamError::Panicked));
        }
        Ok(())
    }

    /// Returns once every helper of the current dispatch has finished: polls first (with
    /// [`TeamOptions::spin`]), then parks on `done`.
    fn wait_for_helpers(&self) {
        let shared = &*self.shared;
        if shared.spin {
            for _ in 0..SPIN_ROUNDS {
                if shared.running.load(Ordering::SeqCst) == 0 {
                    return;
                }
                core::hint::spin_loop();
            }
        }
        let mut guard = shared.lock();
        // A read-modify-write, not a store: `running` is read next (see `Shared`).
        shared.caller_parked.swap(true, Ordering::SeqCst);
        while shared.running.load(Ordering::SeqCst) != 0 {
            guard = shared.done.wait(guard).unwrap_or_else(PoisonError::into_inner);
        }
        shared.caller_parked.store(false, Ordering::SeqCst);
        drop(guard);
    }
}

/// A worker thread: waits for each new generation (polling, then parked), works on it if
/// it is one of its helpers, reports completion; exits on shutdown.
fn worker_loop(shared: &Shared, index: usize) {
    let mut seen = 0u64;
    loop {
        let g = next_generation(shared, seen);
        if shared.shutdown.load(Ordering::SeqCst) {
            return;
        }
        let Some(mine) = shared.job(g, index) else {
            // A newer generation is being published: look again.
            continue;
        };
        seen = g;
        let Some(job) = mine else {
            continue;
        };
        shared.work(job, index);
        if shared.running.fetch_sub(1, Ordering::SeqCst) == 1
            && shared.caller_parked.load(Ordering::SeqCst)
        {
            // Taking the lock waits for the caller between its check and its wait.
            drop(shared.lock());
            shared.done.notify_one();
        }
    }
}

/// The first published (even) generation other than `seen`, or any once shutting down:
/// polls (with spinning on), then parks on `wake`.
fn next_generation(shared: &Shared, seen: u64) -> u64 {
    let fresh = |g: u64| g != seen && g.is_multiple_of(2);
    if shared.spin {
        for _ in 0..SPIN_ROUNDS {
            let g = shared.generation.load(Ordering::SeqCst);
            if fresh(g) || shared.shutdown.load(Ordering::SeqCst) {
                return g;
            }
            core::hint::spin_loop();
        }
    }
    let mut guard = shared.lock();
    shared.sleepers.fetch_add(1, Ordering::SeqCst);
    let g = loop {
        let g = shared.generation.load(Ordering::SeqCst);
        if fresh(g) || shared.shutdown.load(Ordering::SeqCst) {
            break g;
        }
        if !g.is_multiple_of(2) {
            // The caller is between its two stores: it does not block there, so poll.
            drop(guard);
            core::hint::spin_loop();
            guard = shared.lock();
            continue;
        }
        guard = shared.wake.wait(guard).unwrap_or_else(PoisonError::into_inner);
    };
    shared.sleepers.fetch_sub(1, Ordering::SeqCst);
    drop(guard);
    g
}

impl Drop for Team {
    fn drop(&mut self) {
        // A read-modify-write, as every write a parked member's check depends on (`Shared`).
        self.shared.shutdown.swap(true, Ordering::SeqCst);
        drop(self.shared.lock());
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
