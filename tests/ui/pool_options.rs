use neon_macros::neon_plan;

// One mistake per plan: each shows exactly one error.

neon_plan! {
    pub plan MissingKernel {
        dim frames in 4..=64;
        input x: [8, frames];
        output y: [8, frames];
        y = avg_pool1d(x);
    }
}

neon_plan! {
    pub plan PaddingAboveHalfKernel {
        dim frames in 4..=64;
        input x: [8, frames];
        output y: [8, frames / 3 + 1];
        y = avg_pool1d(x, kernel = 3, padding = 2);
    }
}

neon_plan! {
    pub plan CeilModeLimit {
        dim frames in 4..=64;
        input x: [8, frames];
        output y: [8, frames / 4 + 1];
        y = max_pool1d(x, kernel = 3, stride = 4, ceil_mode);
    }
}

neon_plan! {
    pub plan GlobalPoolKernel {
        dim frames in 4..=64;
        input x: [8, frames];
        output y: [8, 1];
        y = global_avg_pool(x, kernel = 2);
    }
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
