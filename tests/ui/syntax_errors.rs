use neon_macros::neon_plan;

// Every malformed item is reported (each is skipped up to its `;`); the checks run only
// on a block that parsed.
neon_plan! {
    pub plan P {
        dim frames in 1..=n;
        scalar pos: u32;
        input x: [4, frames];
        output y: [4, frames];
        y = relu(x) + 1;
    }
}

fn main() {}
