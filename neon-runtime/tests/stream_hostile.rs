//! `exec::stream::StreamPlanBuilder` against hostile declarations: dimensions whose product
//! overflows `usize` (an error, not a saturated size nor an overflow panic in the copies),
//! and a variable assigned twice in one run (the last assignment wins, as in TFLite).

use neon_runtime::exec::stream::{ElemType, StreamPlanBuilder};
use neon_runtime::{Error, Portable};

const HUGE: usize = 1 << (usize::BITS / 2 + 1);

#[test]
fn dimensions_whose_product_overflows_are_refused() {
    let mut b = StreamPlanBuilder::new();
    assert!(matches!(b.input(ElemType::I8, &[HUGE, HUGE, 1]), Err(Error::BadShape { .. })));
    assert!(matches!(b.input(ElemType::I8, &[usize::MAX, 2]), Err(Error::BadShape { .. })));
    let x = b.input(ElemType::I8, &[4]).unwrap();
    // Before the fix the saturated size was accepted and the copy steps' row arithmetic
    // overflowed (a panic with overflow checks).
    assert!(matches!(b.concat(&[x, x], 0).map(drop), Ok(())));
    assert!(matches!(
        b.reshape(x, &[HUGE, HUGE]),
        Err(Error::BadShape { .. } | Error::Shape { .. })
    ));
    let v = b.variable::<i8>(&[1], &[0]).unwrap();
    let r = b.read(v).unwrap();
    // The builder is still usable after the errors.
    let y = b.concat(&[r, x], 0).unwrap();
    let plan = b.build(y).unwrap();
    let (mut state, mut scratch) = (plan.state(), plan.scratch());
    let out = plan.run::<Portable, i8, i8>(&mut state, &mut scratch, &[1, 2, 3, 4]).unwrap();
    assert_eq!(out, &[0, 1, 2, 3, 4]);
}

#[test]
fn a_variable_assigned_twice_keeps_the_last_value() {
    let mut b = StreamPlanBuilder::new();
    let x = b.input(ElemType::I8, &[2]).unwrap();
    let v = b.variable::<i8>(&[2], &[7, 7]).unwrap();
    let first = b.read(v).unwrap();
    b.assign(v, x).unwrap();
    b.assign(v, first).unwrap();
    let after = b.read(v).unwrap();
    let y = b.concat(&[after, x], 0).unwrap();
    let plan = b.build(y).unwrap();
    let (mut state, mut scratch) = (plan.state(), plan.scratch());
    for _ in 0..3 {
        let out = plan.run::<Portable, i8, i8>(&mut state, &mut scratch, &[1, 2]).unwrap();
        assert_eq!(out, &[7, 7, 1, 2]);
    }
}
