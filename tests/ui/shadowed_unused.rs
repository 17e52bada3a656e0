//! A second `let h` that is never read is reported by the user's name, `h` (the memory
//! map's label `h#2` stays internal).

#[macro_use]
#[path = "fixtures/plans.rs"]
mod fixtures;

fixed_plan! {
    P;
    let h = relu(x);
    y = relu(h);
    let h = relu(h);
}

fn main() {}
