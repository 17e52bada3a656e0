//! A second `let h` that is never read is reported by the user's name, `h` (the memory
//! map's label `h#2` stays internal).

use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        input x: [8, 10];
        output y: [8, 10];
        let h = relu(x);
        y = relu(h);
        let h = relu(h);
    }
}

fn main() {}
