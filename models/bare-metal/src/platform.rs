//! The platform layer of the bare-metal program: reset code, semihosting console and exit,
//! the counter, stack measurement, a take-once cell for static buffers, the panic handler.
//!
//! All of the program's `unsafe` is here, each block with its justification: instructions
//! that Rust cannot express (`asm!`) and one `Sync` cell. The model code in `main.rs` is safe.
//!
//! # Reset (`_start`, EL1, one core)
//! qemu's `virt` board without EL2/EL3 starts the core at EL1 at the ELF entry point with the
//! MMU and caches off. `_start`:
//! 1. enables FP/SIMD (`CPACR_EL1.FPEN = 0b11`; otherwise the first NEON instruction traps);
//! 2. turns on the MMU with a constant identity map (below) and the data and instruction
//!    caches, so RAM is Normal write-back memory: with the MMU off every data access is
//!    Device-nGnRnE, where unaligned accesses fault and nothing is cached;
//! 3. zeroes `.bss` (the static workspace) and paints the stack with [`STACK_PAINT`];
//! 4. sets the stack pointer to the top of the linker script's stack and calls `neon_main`.
//!
//! The identity map is one level-1 table of 1 GiB blocks (4 KiB granule, 32-bit virtual
//! addresses: `TCR_EL1.T0SZ = 32`, walks start at level 1): 0-1 GiB Device-nGnRnE, execute
//! never (the board's peripherals), 1-2 GiB Normal inner/outer write-back, inner shareable
//! (RAM), the rest unmapped. (ARM Architecture Reference Manual for A-profile, D8
//! "The AArch64 Virtual Memory System Architecture".) On real hardware the caches would be
//! invalidated before they are enabled; qemu does not model them.
//!
//! # Semihosting
//! `HLT #0xF000` with the operation in `w0` and a parameter block address in `x1` (Arm
//! "Semihosting for AArch32 and AArch64", version 2.0): `SYS_WRITE0` (0x04) prints a
//! NUL-terminated string, `SYS_EXIT` (0x18) with `[ADP_Stopped_ApplicationExit, code]` ends
//! the emulation, and qemu exits with `code`. Needs `-semihosting-config enable=on` (the cargo
//! runner in `.cargo/config.toml`).

use core::arch::{asm, global_asm};
use core::cell::UnsafeCell;
use core::fmt;
use core::sync::atomic::{AtomicBool, Ordering};

/// Value `_start` writes to every stack word, so [`stack_used`] finds the deepest one written.
pub const STACK_PAINT: u64 = 0x5354_4b50_4e45_4f4e;

global_asm!(
    ".section .text.boot, \"ax\"",
    ".global _start",
    "_start:",
    // 1. FP/SIMD on at EL1 and EL0.
    "    mov x0, #(3 << 20)",
    "    msr cpacr_el1, x0",
    "    isb",
    // Exception vectors (a fault reports itself and exits instead of hanging).
    "    adrp x0, neon_vectors",
    "    add x0, x0, :lo12:neon_vectors",
    "    msr vbar_el1, x0",
    // 2. MMU: MAIR attr0 = Device-nGnRnE (0x00), attr1 = Normal WB RW-allocate (0xff).
    "    mov x0, #0xff00",
    "    msr mair_el1, x0",
    // TCR_EL1: T0SZ = 32, IRGN0 = ORGN0 = write-back (0b01), SH0 = inner shareable, TG0 = 4 KiB,
    // EPD1 = 1 (no TTBR1 walks), IPS = 32 bits.
    "    movz x0, #0x3520",
    "    movk x0, #0x80, lsl #16",
    "    msr tcr_el1, x0",
    "    adrp x0, neon_page_table",
    "    add x0, x0, :lo12:neon_page_table",
    "    msr ttbr0_el1, x0",
    "    isb",
    "    tlbi vmalle1",
    "    dsb nsh",
    "    isb",
    // SCTLR_EL1: M (MMU), C (data cache), I (instruction cache) on; A (alignment check) off.
    "    mrs x0, sctlr_el1",
    "    orr x0, x0, #(1 << 0)",
    "    orr x0, x0, #(1 << 2)",
    "    orr x0, x0, #(1 << 12)",
    "    bic x0, x0, #(1 << 1)",
    "    msr sctlr_el1, x0",
    "    isb",
    // 3. Zero .bss (16-byte aligned bounds, see link.x).
    "    adrp x0, __bss_start",
    "    add x0, x0, :lo12:__bss_start",
    "    adrp x1, __bss_end",
    "    add x1, x1, :lo12:__bss_end",
    "1:  cmp x0, x1",
    "    b.hs 2f",
    "    stp xzr, xzr, [x0], #16",
    "    b 1b",
    // Paint the stack.
    "2:  adrp x0, __stack_bottom",
    "    add x0, x0, :lo12:__stack_bottom",
    "    adrp x1, __stack_top",
    "    add x1, x1, :lo12:__stack_top",
    "    movz x2, #{p0}",
    "    movk x2, #{p1}, lsl #16",
    "    movk x2, #{p2}, lsl #32",
    "    movk x2, #{p3}, lsl #48",
    "3:  cmp x0, x1",
    "    b.hs 4f",
    "    stp x2, x2, [x0], #16",
    "    b 3b",
    // 4. Stack pointer, then Rust (which never returns).
    "4:  mov sp, x1",
    "    bl neon_main",
    "5:  wfe",
    "    b 5b",
    "",
    // Stack bytes never written: x0 = bytes from the stack's bottom that still hold the paint.
    ".section .text.neon_stack_unused, \"ax\"",
    ".global neon_stack_unused",
    "neon_stack_unused:",
    "    adrp x1, __stack_bottom",
    "    add x1, x1, :lo12:__stack_bottom",
    "    adrp x2, __stack_top",
    "    add x2, x2, :lo12:__stack_top",
    "    movz x3, #{p0}",
    "    movk x3, #{p1}, lsl #16",
    "    movk x3, #{p2}, lsl #32",
    "    movk x3, #{p3}, lsl #48",
    "    mov x0, x1",
    "1:  cmp x0, x2",
    "    b.hs 2f",
    "    ldr x4, [x0]",
    "    cmp x4, x3",
    "    b.ne 2f",
    "    add x0, x0, #8",
    "    b 1b",
    "2:  sub x0, x0, x1",
    "    ret",
    "",
    // The identity map (one level-1 table, 1 GiB blocks; descriptor bits: 0b01 block, AttrIndx
    // at 2, SH at 8, AF at 10, PXN/UXN at 53/54).
    ".section .rodata.neon_page_table, \"a\"",
    ".balign 4096",
    "neon_page_table:",
    "    .quad 0x0000000000000401 | (3 << 53)",
    "    .quad 0x0000000040000000 | (1 << 2) | (3 << 8) | (1 << 10) | 1",
    "    .quad 0",
    "    .quad 0",
    "",
    // Exception vectors: 16 entries of 128 bytes (2 KiB aligned), each passing its index to
    // `neon_exception` with the syndrome, return address and fault address.
    ".section .text.neon_vectors, \"ax\"",
    ".balign 2048",
    "neon_vectors:",
    ".irp i, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15",
    "    .balign 128",
    "    mov x0, #\\i",
    "    b neon_exception_entry",
    ".endr",
    "neon_exception_entry:",
    "    mrs x1, esr_el1",
    "    mrs x2, elr_el1",
    "    mrs x3, far_el1",
    "    bl neon_exception",
    p0 = const STACK_PAINT & 0xffff,
    p1 = const (STACK_PAINT >> 16) & 0xffff,
    p2 = const (STACK_PAINT >> 32) & 0xffff,
    p3 = const STACK_PAINT >> 48,
);

/// Any exception (the program takes none): reports the vector (`kind`: 0-3 current EL with
/// SP_EL0, 4-7 current EL with SP_ELx, 8-15 lower ELs; within each group synchronous, IRQ,
/// FIQ, SError), `ESR_EL1`, `ELR_EL1` and `FAR_EL1`, then exits with code 3.
#[no_mangle]
extern "C" fn neon_exception(kind: u64, esr: u64, elr: u64, far: u64) -> ! {
    use core::fmt::Write;
    let mut console = Console::new();
    let _ =
        writeln!(console, "exception {kind}: ESR_EL1 {esr:#x}, ELR_EL1 {elr:#x}, FAR_EL1 {far:#x}");
    drop(console);
    exit(3)
}

extern "C" {
    /// Bytes at the bottom of the stack that still hold [`STACK_PAINT`] (assembly above).
    fn neon_stack_unused() -> usize;
    /// Linker script symbols: the stack's bounds (only their addresses are used).
    static __stack_bottom: u8;
    static __stack_top: u8;
}

/// Stack bytes written so far (the deepest point the stack reached, counting from the top).
pub fn stack_used() -> usize {
    stack_size() - {
        // SAFETY: an assembly routine without arguments that only reads the stack region
        // defined by link.x (aligned, mapped RAM) and clobbers caller-saved x0-x4, as the C
        // calling convention allows.
        unsafe { neon_stack_unused() }
    }
}

/// Bytes of the stack reserved by the linker script.
pub fn stack_size() -> usize {
    // Addresses of linker symbols, never dereferenced.
    let bottom = core::ptr::addr_of!(__stack_bottom) as usize;
    let top = core::ptr::addr_of!(__stack_top) as usize;
    top - bottom
}

/// Issues a semihosting call: operation `op`, parameter `arg` (a value or a block address).
fn semihost(op: u64, arg: usize) -> usize {
    let ret: usize;
    // SAFETY: the semihosting trap reads the parameter block the callers pass (live for the
    // call: a NUL-terminated buffer or an exit block) and returns a value in x0; it has no
    // other effect on the program's state.
    unsafe {
        asm!("hlt #0xf000", inout("x0") op as usize => ret, in("x1") arg, options(nostack));
    }
    ret
}

/// Ends a test program: exit code 0 when `outcome` is `Ok(true)` (pass), 1 for `Ok(false)`
/// (a mismatch), 2 for an error (printed to `out` first).
pub fn finish(mut out: Console, outcome: Result<bool, impl core::fmt::Display>) -> ! {
    use core::fmt::Write;
    let code = match outcome {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            let _ = writeln!(out, "error: {e}");
            2
        }
    };
    drop(out);
    exit(code)
}

/// Ends the emulation with exit `code` (semihosting `SYS_EXIT`, `ADP_Stopped_ApplicationExit`).
pub fn exit(code: u32) -> ! {
    const SYS_EXIT: u64 = 0x18;
    const ADP_STOPPED_APPLICATION_EXIT: u64 = 0x20026;
    let block = [ADP_STOPPED_APPLICATION_EXIT, u64::from(code)];
    semihost(SYS_EXIT, block.as_ptr() as usize);
    // Not reached under a semihosting debugger; otherwise wait forever.
    loop {
        core::hint::spin_loop();
    }
}

/// Line-buffered console on the semihosting host's stdout (`SYS_WRITE0`).
pub struct Console {
    buf: [u8; 160],
    len: usize,
}

impl Console {
    /// An empty console buffer.
    pub const fn new() -> Self {
        Self { buf: [0; 160], len: 0 }
    }

    fn flush(&mut self) {
        const SYS_WRITE0: u64 = 0x04;
        if self.len > 0 {
            self.buf[self.len] = 0;
            semihost(SYS_WRITE0, self.buf.as_ptr() as usize);
            self.len = 0;
        }
    }
}

impl fmt::Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for &b in s.as_bytes() {
            // A 0 byte would end SYS_WRITE0's string early.
            self.buf[self.len] = if b == 0 { b'?' } else { b };
            self.len += 1;
            if b == b'\n' || self.len == self.buf.len() - 1 {
                self.flush();
            }
        }
        Ok(())
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        self.flush();
    }
}

/// The virtual counter (`CNTVCT_EL0`) and its frequency in Hz (`CNTFRQ_EL0`; 62.5 MHz on
/// qemu's `virt`, where it follows the host's clock).
pub fn counter() -> (u64, u64) {
    let (count, freq): (u64, u64);
    // SAFETY: reads of two EL0-accessible system registers; no memory or flags touched.
    unsafe {
        asm!(
            "isb",
            "mrs {c}, cntvct_el0",
            "mrs {f}, cntfrq_el0",
            c = out(reg) count,
            f = out(reg) freq,
            options(nomem, nostack, preserves_flags)
        );
    }
    (count, freq)
}

/// A `static` buffer handed out once as `&'static mut T` (the static workspace). Its value
/// is `const`-constructed, so a zeroed workspace lands in `.bss` and costs no flash.
pub struct TakeOnce<T> {
    taken: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the only access to `value` is the one `&mut T` that `take` returns, at most once
// (the flag is swapped atomically), so no two threads or cores can reach it together; `T:
// Send` because that reference may be used on whichever core took it.
unsafe impl<T: Send> Sync for TakeOnce<T> {}

impl<T> TakeOnce<T> {
    /// A cell holding `value`, not taken yet.
    pub const fn new(value: T) -> Self {
        Self { taken: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    /// The value, mutably, the first time; `None` afterwards.
    // A `&mut` from `&self` is this cell's purpose: the flag makes it unique (SAFETY below).
    #[allow(clippy::mut_from_ref)]
    pub fn take(&'static self) -> Option<&'static mut T> {
        if self.taken.swap(true, Ordering::AcqRel) {
            return None;
        }
        // SAFETY: the flag was false, so this is the first and only call that gets here:
        // the returned reference is the only one to `value` for the rest of the program.
        Some(unsafe { &mut *self.value.get() })
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    use core::fmt::Write;
    let mut console = Console::new();
    let _ = writeln!(console, "panic: {info}");
    drop(console);
    exit(101)
}
