use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        weight r1: residual_conv[8, 3];
        weight r2: residual_conv[8, 3];
        weight r3: residual_conv[8, 3];
        weight r4: residual_conv[8, 3];
        weight cn: convnext[8, 24, 7];
        input x: [8, 10];
        output a: [8, 10];
        output b: [8, 10];
        output c: [8, 10];
        output d: [8, 10];
        output e: [8, 10];
        a = residual_conv(x, r1);
        b = residual_conv(x, r2, slope = 0.1, relu);
        c = residual_conv(x, r3, slope = 0.1, dilations = (1, 2, 3), kernel = 5);
        d = residual_conv(x, r4, relu, dilations = 0);
        e = convnext(x, cn, eps = 0);
    }
}

fn main() {}
