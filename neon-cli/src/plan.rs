//! `neon plan`: the workspace and memory map of a compiled plan
//! ([`neon_models::plans::PLANS`]), as text, JSON or an SVG picture of buffer lifetimes.

use std::fmt::Write as _;

use clap::Args;
use neon_models::plans::{self, PlanInfo};
use neon_runtime::workspace::MemoryRegion;
use serde_json::json;

use crate::line;

#[derive(Args)]
pub struct PlanArgs {
    /// A plan name, as `neon plan --list` prints them (e.g. `openwakeword.embedding`).
    #[arg(required_unless_present = "list")]
    name: Option<String>,
    /// Print every plan name (first column) with a one-line description.
    #[arg(long, conflicts_with_all = ["name", "json", "svg"])]
    list: bool,
    /// Print one JSON object: {"name", "steps", "workspace_bytes", "lower_bound_bytes",
    /// "max_workers", "values": [{"name", "offset", "bytes", "first_step", "last_step"}]}
    /// (offset null for caller-owned tensors, max_workers null for any team size).
    #[arg(long)]
    json: bool,
    /// Also write the buffer lifetimes as an SVG picture to PATH.
    #[arg(long, value_name = "PATH")]
    svg: Option<String>,
}

/// Runs `neon plan`.
pub fn run(args: &PlanArgs) -> Result<(), String> {
    if args.list {
        let width = plans::PLANS.iter().map(|p| p.name.len()).max().unwrap_or(0);
        for p in plans::PLANS {
            line(format_args!("{:<width$}  {}", p.name, p.description))?;
        }
        return Ok(());
    }
    let name = args.name.as_deref().unwrap_or_default();
    let Some(plan) = plans::find(name) else {
        let names: Vec<&str> = plans::PLANS.iter().map(|p| p.name).collect();
        return Err(format!("unknown plan `{name}`; plans: {}", names.join(", ")));
    };
    if let Some(path) = &args.svg {
        std::fs::write(path, svg(plan)).map_err(|e| format!("cannot write {path}: {e}"))?;
    }
    if args.json {
        return line(format_args!("{}", to_json(plan)));
    }
    for l in report(plan).lines() {
        line(format_args!("{l}"))?;
    }
    Ok(())
}

/// Rows of the lifetime picture: the memory map by first step, then last step (so the
/// picture reads top-left to bottom-right like the schedule), then map order.
fn rows(plan: &PlanInfo) -> Vec<&'static MemoryRegion> {
    let mut rows: Vec<&MemoryRegion> = plan.memory_map.iter().collect();
    rows.sort_by_key(|r| (r.first_step, r.last_step));
    rows
}

/// Columns of the picture: the plan's steps, and any step a region names beyond them.
fn columns(plan: &PlanInfo) -> usize {
    plan.memory_map.iter().map(|r| r.last_step.saturating_add(1)).fold(plan.steps, usize::max)
}

/// `1234567` -> `1,234,567`.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn offset_text(r: &MemoryRegion) -> String {
    r.offset.map_or_else(|| "caller".to_string(), grouped)
}

fn max_workers_text(plan: &PlanInfo) -> String {
    if plan.max_workers == usize::MAX {
        "any".to_string()
    } else {
        plan.max_workers.to_string()
    }
}

/// The text report: the plan's figures, then one row per value with its offset, size and a
/// bar with `#` at the steps it is live.
fn report(plan: &PlanInfo) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "plan               {}", plan.name);
    let _ = writeln!(out, "                   {}", plan.description);
    let _ = writeln!(out, "steps              {}", plan.steps);
    let _ = writeln!(out, "workspace bytes    {}", grouped(plan.workspace_bytes));
    let _ = writeln!(out, "lower bound bytes  {}", grouped(plan.lower_bound_bytes));
    let empty = if plan.workspace_bytes == 0 { " (no intermediates)" } else { "" };
    let _ = writeln!(out, "workspace / bound  {:.4}{empty}", plan.ratio());
    let _ = writeln!(out, "max workers        {}", max_workers_text(plan));
    let _ = writeln!(out);

    let rows = rows(plan);
    let cols = columns(plan);
    let name_w = rows.iter().map(|r| r.name.len()).chain(["value".len()]).max().unwrap_or(0);
    let off_w =
        rows.iter().map(|r| offset_text(r).len()).chain(["offset".len()]).max().unwrap_or(0);
    let bytes_w =
        rows.iter().map(|r| grouped(r.bytes).len()).chain(["bytes".len()]).max().unwrap_or(0);
    // Step axis: the step number above every tenth column, then the last digit of every one.
    let mut tens = String::new();
    for c in (0..cols).step_by(10) {
        let label = c.to_string();
        let _ = write!(tens, "{label:<10}");
    }
    let units: String = (0..cols).map(|c| char::from(b'0' + (c % 10) as u8)).collect();
    let lead = name_w + off_w + bytes_w + 6;
    let _ = writeln!(out, "{:<lead$}{}", "", tens.trim_end());
    let _ =
        writeln!(out, "{:<name_w$}  {:>off_w$}  {:>bytes_w$}  {units}", "value", "offset", "bytes");
    for r in rows {
        let bar: String = (0..cols)
            .map(|c| if (r.first_step..=r.last_step).contains(&c) { '#' } else { '.' })
            .collect();
        let _ = writeln!(
            out,
            "{:<name_w$}  {:>off_w$}  {:>bytes_w$}  {bar}",
            r.name,
            offset_text(r),
            grouped(r.bytes)
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "offset \"caller\": a tensor the caller owns (input, output, state), not in the workspace"
    );
    out
}

/// The `--json` object.
fn to_json(plan: &PlanInfo) -> serde_json::Value {
    let values: Vec<serde_json::Value> = plan
        .memory_map
        .iter()
        .map(|r| {
            json!({
                "name": r.name,
                "offset": r.offset,
                "bytes": r.bytes,
                "first_step": r.first_step,
                "last_step": r.last_step,
            })
        })
        .collect();
    json!({
        "name": plan.name,
        "description": plan.description,
        "steps": plan.steps,
        "workspace_bytes": plan.workspace_bytes,
        "lower_bound_bytes": plan.lower_bound_bytes,
        "max_workers": (plan.max_workers != usize::MAX).then_some(plan.max_workers),
        "values": values,
    })
}

/// `text` with XML's special characters escaped.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// Width of a step column, height of a row, and the width of one monospace character at
/// the picture's 12 px font, in SVG user units (pixels).
const CELL: usize = 16;
const ROW: usize = 18;
const CHAR: usize = 8;

/// The lifetime picture as a standalone SVG document: a title with the plan's figures, a
/// step axis, and per value (rows as in the text report) its name, offset and size, and a
/// rectangle over its live steps (blue in the workspace, grey for caller-owned tensors).
fn svg(plan: &PlanInfo) -> String {
    let rows = rows(plan);
    let cols = columns(plan);
    let name_w = rows.iter().map(|r| r.name.len()).max().unwrap_or(0).max(5) * CHAR;
    let off_w = rows.iter().map(|r| offset_text(r).len()).max().unwrap_or(0).max(6) * CHAR;
    let bytes_w = rows.iter().map(|r| grouped(r.bytes).len()).max().unwrap_or(0).max(5) * CHAR;
    let pad = 10;
    let (x_name, x_off) = (pad, pad + name_w + CHAR + off_w);
    let x_bytes = x_off + CHAR + bytes_w;
    let x0 = x_bytes + 2 * CHAR;
    let y_axis = 76;
    let y0 = y_axis + 8;
    let title = format!(
        "{}: {} steps, workspace {} bytes, lower bound {} bytes (x{:.4}), max workers {}",
        plan.name,
        plan.steps,
        grouped(plan.workspace_bytes),
        grouped(plan.lower_bound_bytes),
        plan.ratio(),
        max_workers_text(plan)
    );
    let width = (x0 + cols * CELL + pad).max(pad * 2 + title.len() * CHAR);
    let height = y0 + rows.len() * ROW + 40;

    let mut s = String::new();
    let _ = writeln!(s, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="monospace" font-size="12">"#
    );
    let _ = writeln!(s, "<title>{}</title>", xml_escape(&title));
    let _ = writeln!(s, r#"<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>"#);
    let _ =
        writeln!(s, r#"<text x="{pad}" y="20" font-weight="bold">{}</text>"#, xml_escape(&title));
    let _ = writeln!(s, r#"<text x="{pad}" y="38">{}</text>"#, xml_escape(plan.description));
    // Column headings and the step axis: a number on every step while they fit (10 steps),
    // then on every second one, past 40 steps on every fifth.
    let every = match cols {
        0..=10 => 1,
        11..=40 => 2,
        _ => 5,
    };
    let _ = writeln!(s, r#"<text x="{x_name}" y="{y_axis}">value</text>"#);
    let _ = writeln!(s, r#"<text x="{x_off}" y="{y_axis}" text-anchor="end">offset</text>"#);
    let _ = writeln!(s, r#"<text x="{x_bytes}" y="{y_axis}" text-anchor="end">bytes</text>"#);
    let _ = writeln!(s, r#"<text x="{x0}" y="{}">step</text>"#, y_axis - 16);
    let bottom = y0 + rows.len() * ROW;
    for c in 0..=cols {
        let x = x0 + c * CELL;
        let _ = writeln!(
            s,
            r##"<line x1="{x}" y1="{y0}" x2="{x}" y2="{bottom}" stroke="#e4e4e4" stroke-width="1"/>"##
        );
        if c < cols && c % every == 0 {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{y_axis}" text-anchor="middle">{c}</text>"#,
                x + CELL / 2
            );
        }
    }
    for (i, r) in rows.iter().enumerate() {
        let y = y0 + i * ROW;
        let text_y = y + ROW - 5;
        let (name, off, bytes) = (xml_escape(r.name), offset_text(r), grouped(r.bytes));
        let fill = if r.offset.is_some() { "#4a7fc1" } else { "#a0a0a0" };
        let x = x0 + r.first_step * CELL;
        let w = (r.last_step.saturating_sub(r.first_step) + 1) * CELL;
        let _ = writeln!(s, r#"<text x="{x_name}" y="{text_y}">{name}</text>"#);
        let _ = writeln!(s, r#"<text x="{x_off}" y="{text_y}" text-anchor="end">{off}</text>"#);
        let _ = writeln!(s, r#"<text x="{x_bytes}" y="{text_y}" text-anchor="end">{bytes}</text>"#);
        let _ = writeln!(
            s,
            r#"<rect x="{x}" y="{}" width="{w}" height="{}" fill="{fill}"><title>{name}: offset {off}, {bytes} bytes, steps {}..={}</title></rect>"#,
            y + 2,
            ROW - 4,
            r.first_step,
            r.last_step
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{pad}" y="{}"><tspan fill="#4a7fc1">&#9632;</tspan> in the workspace   <tspan fill="#a0a0a0">&#9632;</tspan> caller-owned (input, output, state)</text>"##,
        bottom + 24
    );
    let _ = writeln!(s, "</svg>");
    s
}
