use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        input x: [1, 64];
        output y: [1, 128];
        y = reflect_pad(x, right = 64);
    }
}

neon_plan! {
    pub plan Q {
        dim frames in 4..=100;
        input x: [1, frames];
        output y: [1, frames + 8];
        y = reflect_pad(x, left = 5, right = 3);
    }
}

neon_plan! {
    pub plan R {
        input x: [1, 64];
        output y: [1, 64];
        y = reflect_pad(x);
    }
}

fn main() {}
