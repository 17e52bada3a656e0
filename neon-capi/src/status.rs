//! Status codes, failures and their messages: the thread's last error, the handles' error
//! strings, and panics caught before they reach C.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

use neon_models::Error;

/// The result of every call.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NeonStatus {
    /// Success.
    Ok = 0,
    /// A required pointer was NULL.
    NullPointer = 1,
    /// A pointer was not aligned for its type (e.g. an `int16_t *` at an odd address).
    MisalignedPointer = 2,
    /// An argument is out of range or malformed: a length, a threshold, an unknown model name,
    /// a bad session option or VAD configuration, a string that is not UTF-8, non-finite
    /// samples.
    InvalidArgument = 3,
    /// A model or weights file is malformed or cannot run.
    Model = 4,
    /// A file could not be read.
    Io = 5,
    /// An output buffer is too small; the size needed was stored.
    BufferTooSmall = 6,
    /// The handle is not live: already freed (use after free), never created, or of
    /// another kind.
    UnknownHandle = 7,
    /// A panic inside the library was caught (a bug: please report it with the message,
    /// which is in `neon_last_error()`; nothing is printed).
    Panic = 8,
    /// The handle is in use by a call on another thread (one call at a time per handle);
    /// nothing was done and the handle is unchanged (its error message too: the reason is
    /// in the calling thread's `neon_last_error()`). Retry later, or give each thread its
    /// own handle.
    Busy = 9,
}

thread_local! {
    /// The message of the last failed call on this thread.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// A failed call: its status and message.
pub(crate) struct Failure {
    pub(crate) status: NeonStatus,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(status: NeonStatus, message: impl Into<String>) -> Self {
        Self { status, message: message.into() }
    }
}

pub(crate) type Result<T, E = Failure> = std::result::Result<T, E>;

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let status = match &e {
            Error::Weights { .. } | Error::Runtime(_) => NeonStatus::Model,
            Error::Io { .. } => NeonStatus::Io,
            _ => NeonStatus::InvalidArgument,
        };
        Failure::new(status, e.to_string())
    }
}

/// `message` as a C string (interior NULs, which the library never writes, become spaces).
pub(crate) fn c_string(message: &str) -> CString {
    CString::new(message.replace('\0', " ")).unwrap_or_default()
}

fn set_last_error(message: &str) {
    LAST_ERROR.with(|e| *e.borrow_mut() = c_string(message));
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown payload".into());
    format!("panic inside neon: {what}")
}

thread_local! {
    /// Whether this thread is inside [`catch`] (whose panics are reported, not printed).
    static INSIDE_CATCH: Cell<bool> = const { Cell::new(false) };
}

/// Installs, once per process, a panic hook that is silent for panics inside [`catch`]
/// (their message becomes the call's error) and passes every other panic to the hook
/// installed before it (the host's, or Rust's default, which prints as usual).
///
/// The panic hook is process-wide: this wraps the host's hook rather than replacing its
/// behaviour, and a hook the host sets later replaces the wrapper (the library's panics
/// then reach the host's hook). The known concurrent misuse (two threads on one handle)
/// does not panic at all ([`NeonStatus::Busy`]); this covers bugs.
fn quiet_panics_inside_catch() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !INSIDE_CATCH.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

/// Runs `body`, turning a panic into a [`NeonStatus::Panic`] failure (printed nowhere:
/// [`quiet_panics_inside_catch`]).
pub(crate) fn catch(body: impl FnOnce() -> Result<()>) -> Result<()> {
    quiet_panics_inside_catch();
    let outer = INSIDE_CATCH.with(|c| c.replace(true));
    let result = catch_unwind(AssertUnwindSafe(body));
    INSIDE_CATCH.with(|c| c.set(outer));
    result.unwrap_or_else(|payload| Err(Failure::new(NeonStatus::Panic, panic_message(&*payload))))
}

/// The status of `result`; a failure sets the thread's last error and, when `error` is
/// given, the handle's.
pub(crate) fn report(result: Result<()>, error: Option<&mut CString>) -> NeonStatus {
    let Err(failure) = result else { return NeonStatus::Ok };
    set_last_error(&failure.message);
    if let Some(error) = error {
        *error = c_string(&failure.message);
    }
    failure.status
}

/// Runs `body`, catching panics; a failure sets the thread's last error.
pub(crate) fn run(body: impl FnOnce() -> Result<()>) -> NeonStatus {
    report(catch(body), None)
}

/// The message of the last failed call on the calling thread ("" when none failed yet).
/// Owned by the library; valid until the next failing call on this thread. Never NULL.
#[no_mangle]
pub extern "C" fn neon_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// A short English description of a status code (a `neon_status` value; a static string,
/// never NULL; "unknown status" for a value that is not one).
#[no_mangle]
pub extern "C" fn neon_status_string(status: c_int) -> *const c_char {
    const ALL: [NeonStatus; 10] = [
        NeonStatus::Ok,
        NeonStatus::NullPointer,
        NeonStatus::MisalignedPointer,
        NeonStatus::InvalidArgument,
        NeonStatus::Model,
        NeonStatus::Io,
        NeonStatus::BufferTooSmall,
        NeonStatus::UnknownHandle,
        NeonStatus::Panic,
        NeonStatus::Busy,
    ];
    let s: &'static CStr = match ALL.into_iter().find(|&s| s as c_int == status) {
        Some(NeonStatus::Ok) => c"ok",
        Some(NeonStatus::NullPointer) => c"null pointer",
        Some(NeonStatus::MisalignedPointer) => c"misaligned pointer",
        Some(NeonStatus::InvalidArgument) => c"invalid argument",
        Some(NeonStatus::Model) => c"model or weights error",
        Some(NeonStatus::Io) => c"I/O error",
        Some(NeonStatus::BufferTooSmall) => c"buffer too small",
        Some(NeonStatus::UnknownHandle) => c"unknown handle (freed or never created)",
        Some(NeonStatus::Panic) => c"panic inside the library",
        Some(NeonStatus::Busy) => c"handle busy (in use by another thread)",
        None => c"unknown status",
    };
    s.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A panic inside `catch` reaches no hook (nothing printed) and becomes the failure; a
    /// panic elsewhere still reaches the hook installed before the library's.
    #[test]
    fn caught_panics_are_not_printed_and_others_reach_the_previous_hook() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        // The "host's" hook, set before the library's first call (this test binary has no
        // other test that catches, so the library's hook is not installed yet).
        std::panic::set_hook(Box::new(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
        }));
        let result = catch(|| panic!("a bug"));
        let Err(failure) = result else { panic!("no failure") };
        assert_eq!(failure.status, NeonStatus::Panic);
        assert_eq!(failure.message, "panic inside neon: a bug");
        assert_eq!(calls.load(Ordering::SeqCst), 0, "the hook ran for a caught panic");
        // Outside the library: the host's hook runs, as before.
        assert!(catch_unwind(|| panic!("the host's")).is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // Nested catches restore the flag.
        assert!(catch(|| catch(|| panic!("inner")).and(Ok(()))).is_err());
        assert!(catch_unwind(|| panic!("the host's again")).is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        drop(std::panic::take_hook());
    }
}
