//! Misused options and weights, each one error at the token that is wrong: an option given
//! twice; a misspelt required option (reported once, at the misspelling, not also as
//! missing); a reshape to more elements than a tensor may hold (an error, not an overflow);
//! a scale and shift of different lengths (both named); weights given to two statements (one
//! error per weight reused, and no "never used" after them).

#[macro_use]
#[path = "fixtures/plans.rs"]
mod fixtures;

fixed_plan! {
    Twice;
    y = max_pool1d(x, kernel = 1, kernel = 1);
}

fixed_plan! {
    PytorchName;
    y = max_pool1d(x, kernel_size = 1);
}

fixed_plan! {
    HugeReshape;
    let h = reshape(x, to = [65536, 65536, 65536, 65536]);
    y = reshape(h, to = [8, 10]);
}

fixed_plan! {
    ShiftLength;
    weight g: f32[8];
    weight s: f32[16];
    y = scale_shift(x, g, s);
}

fixed_plan! {
    WeightTwice;
    weight g: f32[8];
    weight s: f32[8];
    let h = scale_shift(x, g, s);
    y = scale_shift(h, g, s);
}

fn main() {}
