use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        weight cn: convnext[8, 24];
        weight res: residual_conv[8, 3, 3, 3];
        weight w: f32[8, 8, 3];
        weight cn2: convnext[8, 24, 7];
        input x: [8, 10];
        output y: [8, 10];
        output z: [8, 10];
        y = convnext(x, w);
        z = conv1d(x, cn2);
    }
}

fn main() {}
