//! The registry of live handles, each call's exclusive access to its handle, and frees that
//! wait for the calls in flight.
//!
//! A handle is an [`Arc`] held by the registry under its address (the pointer C sees, which
//! the library never dereferences: every call finds the handle by address in the registry,
//! so a freed, foreign or other-kind pointer is reported, never read). A call clones the
//! `Arc` for its duration, so [`free_handle`] only removes the registry's reference: memory
//! is released by whoever drops the last one, the free or the last call in flight.
//!
//! Handles with state ([`Handle`]) sit in a [`Slot`] behind a busy flag: a call takes it
//! for its duration and a call that finds it taken is [`NeonStatus::Busy`] without touching
//! the handle. Immutable handles (the wake models shared by wake handles) need no flag:
//! [`register_shared`] / [`shared_handle`].

use std::any::Any;
use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::ffi::{c_char, CString};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use crate::args::check_ptr;
use crate::status::{catch, report, run, Failure, NeonStatus, Result};

/// Which kind of handle an address holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Wake,
    WakeModels,
    Transcriber,
    Vad,
}

/// A type handed to C as an opaque handle with state: one call at a time.
pub(crate) trait Handle: Send + 'static {
    /// Its kind in the registry.
    const KIND: Kind;
    /// The message of the last failed call on the handle.
    fn error(&mut self) -> &mut CString;
}

/// `impl Handle for $ty` of kind `$kind`, whose last error is its field `error`.
macro_rules! impl_handle {
    ($ty:ty, $kind:expr) => {
        impl $crate::handle::Handle for $ty {
            const KIND: $crate::handle::Kind = $kind;
            fn error(&mut self) -> &mut ::std::ffi::CString {
                &mut self.error
            }
        }
    };
}
pub(crate) use impl_handle;

/// A live handle with state: the value behind its busy flag.
struct Slot<T> {
    busy: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a `Busy` guard, and only one guard exists at a
// time (`enter` takes the flag with a compare-exchange, the guard's drop releases it), so
// threads sharing the slot never share access to `T`; `T: Send` lets it be used and dropped
// on any thread.
unsafe impl<T: Send> Sync for Slot<T> {}

/// Exclusive access to a handle's value for one call (releases the busy flag on drop; keeps
/// the handle alive even when another thread frees it meanwhile).
pub(crate) struct Busy<T> {
    slot: Arc<Slot<T>>,
}

impl<T> Deref for Busy<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the busy flag: no other reference to the value exists.
        unsafe { &*self.slot.value.get() }
    }
}

impl<T> DerefMut for Busy<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this borrow unique.
        unsafe { &mut *self.slot.value.get() }
    }
}

impl<T> Drop for Busy<T> {
    fn drop(&mut self) {
        self.slot.busy.store(false, Ordering::Release);
    }
}

/// A registry entry: the handle's kind and its value (a `Slot<T>` for a [`Handle`], the
/// value itself for a shared handle).
struct Entry {
    kind: Kind,
    value: Arc<dyn Any + Send + Sync>,
}

/// The live handles by address.
static LIVE: LazyLock<Mutex<HashMap<usize, Entry>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

fn live() -> MutexGuard<'static, HashMap<usize, Entry>> {
    // The map stays consistent under a panic (single inserts and removes): ignore poisoning.
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The value registered at `h` for `kind`, downcast to `V`.
fn lookup<T, V: Any + Send + Sync>(h: *const T, kind: Kind) -> Result<Arc<V>> {
    check_ptr(h, "the handle")?;
    let found = live().get(&(h as usize)).map(|e| (e.kind, Arc::clone(&e.value)));
    match found {
        Some((k, value)) if k == kind => value.downcast::<V>().map_err(|_| {
            Failure::new(NeonStatus::Panic, format!("the handle {h:p}: registry type mismatch"))
        }),
        Some(_) => Err(Failure::new(
            NeonStatus::UnknownHandle,
            format!("the handle {h:p} is not a {kind:?} handle"),
        )),
        None => Err(Failure::new(
            NeonStatus::UnknownHandle,
            format!("the handle {h:p} is not live (freed, or never created)"),
        )),
    }
}

/// Exclusive access to the live handle `h` for one call: [`NeonStatus::Busy`] when another
/// thread is inside a call on it.
fn enter<T: Handle>(h: *const T) -> Result<Busy<T>> {
    let slot = lookup::<T, Slot<T>>(h, T::KIND)?;
    if slot.busy.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
        return Err(Failure::new(
            NeonStatus::Busy,
            format!(
                "the {:?} handle {h:p} is in use by another thread (one call at a time per \
                 handle)",
                T::KIND
            ),
        ));
    }
    Ok(Busy { slot })
}

/// Registers a new handle and returns its address.
pub(crate) fn register<T: Handle>(value: T) -> *mut T {
    let slot = Arc::new(Slot { busy: AtomicBool::new(false), value: UnsafeCell::new(value) });
    let p = Arc::as_ptr(&slot).cast::<T>().cast_mut();
    live().insert(p as usize, Entry { kind: T::KIND, value: slot });
    p
}

/// Registers an immutable handle of `kind` (any number of calls at once) and returns its
/// address.
pub(crate) fn register_shared<T: Send + Sync + 'static>(value: T, kind: Kind) -> *mut T {
    let value = Arc::new(value);
    let p = Arc::as_ptr(&value).cast_mut();
    live().insert(p as usize, Entry { kind, value });
    p
}

/// The immutable handle `h` of `kind`, kept alive by the `Arc` even if freed meanwhile.
pub(crate) fn shared_handle<T: Send + Sync + 'static>(h: *const T, kind: Kind) -> Result<Arc<T>> {
    lookup::<T, T>(h, kind)
}

/// Frees handle `h` of `kind` (stateful or shared); NULL is a no-op, a pointer that is not a
/// live handle of its kind is `UnknownHandle`. The handle leaves the registry at once; its
/// memory goes when the calls in flight on it (on other threads) have returned.
pub(crate) fn free_handle<T>(h: *mut T, kind: Kind) -> NeonStatus {
    if h.is_null() {
        return NeonStatus::Ok;
    }
    run(|| {
        check_ptr(h, "the handle")?;
        let removed = {
            let mut live = live();
            match live.get(&(h as usize)) {
                Some(e) if e.kind == kind => live.remove(&(h as usize)),
                _ => None,
            }
        };
        // Dropped here, outside the registry's lock (a transcriber's drop joins threads).
        match removed {
            Some(entry) => {
                drop(entry);
                Ok(())
            }
            None => Err(Failure::new(
                NeonStatus::UnknownHandle,
                format!("the handle {h:p} is not a live {kind:?} handle (already freed?)"),
            )),
        }
    })
}

/// Runs `body` with exclusive access to the handle `h`; a failure sets the handle's error
/// too (except `Busy` and `UnknownHandle`, which cannot touch it).
pub(crate) fn on_handle<T: Handle>(
    h: *const T,
    body: impl FnOnce(&mut T) -> Result<()>,
) -> NeonStatus {
    let mut v = match enter(h) {
        Ok(v) => v,
        Err(failure) => return report(Err(failure), None),
    };
    let result = catch(|| body(&mut v));
    report(result, Some(v.error()))
}

/// `get(h)`, a string owned by the handle `h` (valid until the next call on it); NULL
/// when `h` is not a live handle of its kind or is busy (the reason in the thread's last
/// error).
pub(crate) fn handle_string<T: Handle>(
    h: *const T,
    get: impl FnOnce(&mut T) -> *const c_char,
) -> *const c_char {
    let mut p = std::ptr::null();
    on_handle(h, |v| {
        p = get(v);
        Ok(())
    });
    p
}

/// The last error message of handle `h` (NULL when `h` is not a live handle of its kind
/// or is busy).
pub(crate) fn handle_error<T: Handle>(h: *const T) -> *const c_char {
    handle_string(h, |v| v.error().as_ptr())
}
