//! Plan workspaces on the heap.

/// A zeroed `T` allocated directly on the heap (a plan workspace can be tens of megabytes:
/// building it on the stack first would overflow it).
///
/// # Safety
/// All-zero bytes must be a valid `T` (true of every `neon_plan!` workspace: an aligned
/// wrapper around `[f32; N]`).
pub(crate) unsafe fn boxed_zeroed<T>() -> alloc::boxed::Box<T> {
    // SAFETY: the caller guarantees all-zero bytes are a valid `T`.
    unsafe { alloc::boxed::Box::<T>::new_zeroed().assume_init() }
}
