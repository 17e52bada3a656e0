//! The registry of live handles: every handle is a `Box` whose address is registered with
//! its kind, so a freed, foreign or other-kind pointer is reported, never dereferenced.

use std::collections::HashMap;
use std::ffi::{c_char, CString};
use std::sync::{LazyLock, Mutex, MutexGuard};

use crate::args::check_ptr;
use crate::status::{catch, report, run, Failure, NeonStatus, Result};

/// Which kind of handle an address holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Wake,
    Transcriber,
    Vad,
}

/// A type handed to C as an opaque handle.
pub(crate) trait Handle {
    /// Its kind in the registry.
    const KIND: Kind;
    /// The message of the last failed call on the handle.
    fn error(&self) -> &Mutex<CString>;
}

/// Addresses of the live handles.
static LIVE: LazyLock<Mutex<HashMap<usize, Kind>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

fn live() -> MutexGuard<'static, HashMap<usize, Kind>> {
    // The map stays consistent under a panic (single inserts and removes): ignore poisoning.
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Checks that `h` is a live handle of its type's kind.
pub(crate) fn check_handle<T: Handle>(h: *const T) -> Result<()> {
    let kind = T::KIND;
    check_ptr(h, "the handle")?;
    match live().get(&(h as usize)) {
        Some(&k) if k == kind => Ok(()),
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

/// Checks that `h` is a live handle of its type's kind and removes it from the registry
/// (under one lock, so two threads freeing one handle cannot both succeed).
fn unregister<T: Handle>(h: *const T) -> Result<()> {
    let kind = T::KIND;
    check_ptr(h, "the handle")?;
    let mut live = live();
    match live.get(&(h as usize)) {
        Some(&k) if k == kind => {
            live.remove(&(h as usize));
            Ok(())
        }
        _ => Err(Failure::new(
            NeonStatus::UnknownHandle,
            format!("the handle {h:p} is not a live {kind:?} handle (already freed?)"),
        )),
    }
}

/// Registers a new handle and returns its address.
pub(crate) fn register<T: Handle>(value: T) -> *mut T {
    let p = Box::into_raw(Box::new(value));
    live().insert(p as usize, T::KIND);
    p
}

/// The last error message of handle `h` (NULL when `h` is not a live handle of its kind).
///
/// # Safety
/// `h` is not being freed by another thread.
pub(crate) unsafe fn handle_error<T: Handle>(h: *const T) -> *const c_char {
    if run(|| check_handle(h)) != NeonStatus::Ok {
        return std::ptr::null();
    }
    // SAFETY: `h` is live, hence a valid `T`; no concurrent free (contract).
    let h = unsafe { &*h };
    // The buffer outlives the guard: it is replaced only by a later failing call.
    h.error().lock().unwrap_or_else(|e| e.into_inner()).as_ptr()
}

/// Frees handle `h`; NULL is a no-op, a pointer that is not a live handle of its kind is
/// `UnknownHandle`.
///
/// # Safety
/// `h` is not in use by another thread.
pub(crate) unsafe fn free_handle<T: Handle>(h: *mut T) -> NeonStatus {
    if h.is_null() {
        return NeonStatus::Ok;
    }
    run(|| {
        unregister(h)?;
        // SAFETY: `h` was live, i.e. created by `Box::into_raw` in `register` and not freed
        // since (it is now removed from the registry, so this runs once).
        drop(unsafe { Box::from_raw(h) });
        Ok(())
    })
}

/// Runs `body` on the handle `h` (shared); a failure sets the handle's error too.
///
/// # Safety
/// A live `h` must not be used mutably by another thread during the call.
pub(crate) unsafe fn on_handle<T: Handle>(
    h: *const T,
    body: impl FnOnce(&T) -> Result<()>,
) -> NeonStatus {
    // Check the handle first (outside the handle's error state, which does not exist yet).
    let status = run(|| check_handle(h));
    if status != NeonStatus::Ok {
        return status;
    }
    // SAFETY: `h` is live (registered by `register` from a `Box`, not yet freed), so it
    // points to a valid `T`; the caller guarantees no concurrent mutable use.
    let v = unsafe { &*h };
    report(catch(|| body(v)), Some(v.error()))
}

/// Runs `body` on the handle `h` (exclusive); a failure sets the handle's error too.
///
/// # Safety
/// A live `h` must not be used by another thread during the call.
pub(crate) unsafe fn on_handle_mut<T: Handle>(
    h: *mut T,
    body: impl FnOnce(&mut T) -> Result<()>,
) -> NeonStatus {
    let status = run(|| check_handle(h));
    if status != NeonStatus::Ok {
        return status;
    }
    // SAFETY: `h` is live, so it points to a valid `T` created from a `Box` (a mutable
    // pointer); the caller guarantees exclusive use during the call.
    let v = unsafe { &mut *h };
    let result = catch(|| body(&mut *v));
    report(result, Some(v.error()))
}
