use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        dim frames in 1..=100;
        weight res: residual_conv[16, 3];
        weight cn: convnext[32, 96, 7];
        input x: [8, frames];
        output y: [16, frames];
        output z: [32, frames];
        y = residual_conv(x, res, slope = 0.1);
        z = convnext(x, cn);
    }
}

fn main() {}
