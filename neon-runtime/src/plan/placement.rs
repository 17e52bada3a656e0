//! Greedy-by-size, best-fit placement of workspace buffers.

use alloc::vec::Vec;

use super::{align_up, Liveness, Location, MemoryPlan, Placement, PlanError, Schedule, ValueId};

struct Buffer {
    root: ValueId,
    bytes: usize,
    first: usize,
    last: usize,
}

/// Places every workspace buffer and computes the workspace size and the lower bound.
pub(super) fn place(schedule: &Schedule, live: &Liveness) -> Result<MemoryPlan, PlanError> {
    let ranges = live.buffer_ranges();
    let mut buffers: Vec<Buffer> = Vec::new();
    for (root, range) in ranges.iter().enumerate() {
        let Some((first, last)) = *range else { continue };
        if schedule.values[root].location != Location::Workspace {
            continue;
        }
        // A buffer holds the largest value of its in-place chain.
        let bytes = live
            .buffer_of
            .iter()
            .enumerate()
            .filter(|&(_, &r)| r == root)
            .map(|(v, _)| schedule.values[v].bytes)
            .max()
            .unwrap_or(0);
        buffers.push(Buffer {
            root,
            bytes: align_up(bytes).ok_or(PlanError::Overflow)?,
            first,
            last,
        });
    }
    // Several orders, best result kept: largest first (greedy by size), most conflicting
    // first (TVM USMP's greedy_by_conflicts), longest-lived first, earliest first. Ties
    // break on earlier start, then id, so the result is deterministic.
    let conflicts: Vec<usize> = buffers
        .iter()
        .map(|b| {
            buffers
                .iter()
                .filter(|o| o.first <= b.last && b.first <= o.last)
                .fold(0usize, |acc, o| acc.saturating_add(o.bytes))
        })
        .collect();
    let mut best: Option<(usize, Vec<Option<usize>>)> = None;
    for order in 0..4 {
        let mut idx: Vec<usize> = (0..buffers.len()).collect();
        idx.sort_by(|&i, &j| {
            let (a, b) = (&buffers[i], &buffers[j]);
            let key = match order {
                0 => b.bytes.cmp(&a.bytes),
                1 => conflicts[j].cmp(&conflicts[i]).then(b.bytes.cmp(&a.bytes)),
                2 => (b.last - b.first).cmp(&(a.last - a.first)).then(b.bytes.cmp(&a.bytes)),
                _ => a.first.cmp(&b.first).then(b.bytes.cmp(&a.bytes)),
            };
            key.then(a.first.cmp(&b.first)).then(a.root.cmp(&b.root))
        });
        let (size, offsets) = best_fit(schedule.values.len(), &buffers, &idx)?;
        if best.as_ref().is_none_or(|(w, _)| size < *w) {
            best = Some((size, offsets));
        }
    }
    let (workspace, offset_of) = best.unwrap_or((0, alloc::vec![None; schedule.values.len()]));

    let placements = (0..schedule.values.len())
        .map(|v| {
            let root = live.buffer_of[v];
            let (first, last) = live.ranges[v];
            Placement {
                offset: if schedule.values[v].location == Location::Workspace {
                    offset_of[root]
                } else {
                    None
                },
                first,
                last,
                aliases: (root != v).then_some(root),
            }
        })
        .collect();

    let steps = schedule.steps.len().max(1);
    let mut lower_bound = 0usize;
    for s in 0..steps {
        let live_bytes: usize = buffers
            .iter()
            .filter(|b| b.first <= s && s <= b.last)
            .try_fold(0usize, |acc, b| acc.checked_add(b.bytes))
            .ok_or(PlanError::Overflow)?;
        lower_bound = lower_bound.max(live_bytes);
    }
    Ok(MemoryPlan { placements, workspace_bytes: workspace, lower_bound_bytes: lower_bound })
}

/// Places `buffers` in the order `idx`, each in the smallest gap (best fit) left by the
/// already placed buffers whose lifetimes overlap it, or above them all. Returns the
/// workspace size and the offset of every buffer root.
fn best_fit(
    values: usize,
    buffers: &[Buffer],
    idx: &[usize],
) -> Result<(usize, Vec<Option<usize>>), PlanError> {
    let mut offset_of: Vec<Option<usize>> = alloc::vec![None; values];
    let mut placed: Vec<(usize, usize, usize, usize)> = Vec::new(); // (offset, end, first, last)
    let mut workspace = 0usize;
    for &i in idx {
        let b = &buffers[i];
        let mut busy: Vec<(usize, usize)> =
            placed.iter().filter(|p| p.2 <= b.last && b.first <= p.3).map(|p| (p.0, p.1)).collect();
        busy.sort_unstable();
        let mut best: Option<(usize, usize)> = None; // (gap size, offset)
        let mut cursor = 0usize;
        for &(start, end) in &busy {
            if start > cursor {
                let gap = start - cursor;
                if gap >= b.bytes && best.is_none_or(|(g, _)| gap < g) {
                    best = Some((gap, cursor));
                }
            }
            cursor = cursor.max(end);
        }
        let offset = best.map_or(cursor, |(_, o)| o);
        let end = offset.checked_add(b.bytes).ok_or(PlanError::Overflow)?;
        workspace = workspace.max(end);
        placed.push((offset, end, b.first, b.last));
        offset_of[b.root] = Some(offset);
    }
    Ok((workspace, offset_of))
}
