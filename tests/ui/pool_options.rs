use neon_macros::neon_plan;

#[macro_use]
#[path = "fixtures/plans.rs"]
mod fixtures;

// One mistake per plan: each shows exactly one error.

pool_plan! {
    MissingKernel;
    output y: [8, frames];
    y = avg_pool1d(x);
}

pool_plan! {
    PaddingAboveHalfKernel;
    output y: [8, frames / 3 + 1];
    y = avg_pool1d(x, kernel = 3, padding = 2);
}

pool_plan! {
    CeilModeLimit;
    output y: [8, frames / 4 + 1];
    y = max_pool1d(x, kernel = 3, stride = 4, ceil_mode);
}

pool_plan! {
    GlobalPoolKernel;
    output y: [8, 1];
    y = global_avg_pool(x, kernel = 2);
}

neon_plan! {
    pub plan WrongRank {
        dim frames in 4..=64;
        input x: [8, frames, 4];
        output y: [8, frames / 2];
        y = max_pool1d(x, kernel = 2);
    }
}

fn main() {}
