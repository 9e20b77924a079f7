//! The session as a picture: latency per iteration with every attempt marked by its status, number and
//! letter, and one small chart per config showing its latency relative to iteration 0 across every
//! measured attempt.
//!
//! A reverted attempt is drawn where its worst config puts it (the baseline it was measured against,
//! moved by that config's change), not at its geometric mean: a change reverted for one slower config
//! must not read as a gain. Intervals from paired rounds are error bars; every mark carries a `<title>`
//! (its change, decision and reason) for hover and screen readers, and the SVG its own title and summary.
//!
//! Pure: iterations and their estimates in, SVG text out, so the same record always gives the same
//! bytes. Text stays SVG text (selectable, no font files needed); the background is an opaque light
//! card so that the picture reads the same in light and dark viewers.

use std::collections::BTreeMap;
use std::ops::Range;

use anyhow::{Result, anyhow};
use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use quick_xml::events::{BytesEnd, BytesStart, BytesText, Event};

use crate::changes::{self, Changes, rescale};
use crate::decision::Estimate;
use crate::decision::Status;
use crate::records::Measurement;
use crate::session::{Iteration, Session, fmt_change, fmt_ms};

/// Where `plot` and `table --write` put the picture, under the sandbox.
pub const DEFAULT_FILE: &str = "perf_results.svg";

pub const WIDTH: u32 = 960;
const MAIN_HEIGHT: u32 = 440;
/// Title and legend, above the latency chart.
const HEADER_HEIGHT: u32 = 70;
const PANEL_COLUMNS: usize = 3;
const PANEL_HEIGHT: u32 = 200;
const PANELS_HEADER: u32 = 34;
const FONT: &str = "sans-serif";

const BACKGROUND: RGBColor = RGBColor(0xfd, 0xfd, 0xfc);
const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);
const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);
const BAND: RGBColor = RGBColor(0xd6, 0xe4, 0xf5);
const BASELINE: RGBColor = RGBColor(0x55, 0x6b, 0x85);
const FIRST: RGBColor = RGBColor(0x99, 0x99, 0x99);
const BEST: RGBColor = RGBColor(0x1f, 0x5f, 0xbf);
const TREND: RGBColor = RGBColor(0x4a, 0x3a, 0x8c);
const WORSE: RGBColor = RGBColor(0xb0, 0x1c, 0x1c);

const MARK_SIZE: i32 = 5;

/// One colour per status, used by nothing else, so every mark can be found by it and tagged.
fn status_colour(status: Status) -> RGBColor {
    match status {
        Status::Keep => RGBColor(0x1a, 0x8f, 0x3c),
        Status::Revert => RGBColor(0xd9, 0x7a, 0x00),
        Status::Crash => RGBColor(0xc4, 0x1e, 0x5a),
    }
}

/// A kept attempt is a filled circle, any other a ring: hollow is what did not stay.
fn mark_style(status: Status) -> ShapeStyle {
    match status {
        Status::Keep => status_colour(status).filled(),
        _ => status_colour(status).stroke_width(2),
    }
}

/// The plot's title: the kernel, and the GPU when one was recorded.
pub fn title(session: &Session) -> String {
    let kernel = std::path::Path::new(&session.kernel)
        .file_stem()
        .map_or(session.kernel.clone(), |s| s.to_string_lossy().into_owned());
    match session.gpu.as_deref().and_then(|gpu| gpu.split(',').next()) {
        Some(gpu) => format!("{kernel} on {gpu}: latency per iteration"),
        None => format!("{kernel}: latency per iteration"),
    }
}

/// The SVG of a session: `iterations` oldest first (iteration 0 the baseline), `estimates` the paired
/// estimates their evidence notes gave, by iteration number (empty for a record without notes: no error
/// bars then), `band_pct` the per-config regression limit drawn around the current baseline.
pub fn svg(
    title: &str,
    iterations: &[Iteration],
    estimates: &BTreeMap<u32, Estimate>,
    band_pct: f64,
) -> Result<String> {
    let changes = changes::of_session(iterations, estimates);
    let configs = config_series(iterations, &changes);
    let last = iterations.last().map_or(0, |it| it.number);
    let rows = configs.len().div_ceil(PANEL_COLUMNS) as u32;
    let panels_height = if rows == 0 {
        0
    } else {
        PANELS_HEADER + rows * PANEL_HEIGHT
    };
    let mut tags = Vec::new();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, MAIN_HEIGHT + panels_height))
            .into_drawing_area();
        root.fill(&BACKGROUND).map_err(plot_error)?;
        let (main, panels) = root.split_vertically(MAIN_HEIGHT);
        let latency = Latency {
            iterations,
            changes: &changes,
            band_pct,
        };
        draw_latency(&main, title, &latency, &mut tags).map_err(plot_error)?;
        if rows > 0 {
            draw_panels(&panels, &configs, last, band_pct, &mut tags).map_err(plot_error)?;
        }
        root.present().map_err(plot_error)?;
    }
    tag_marks(&out, tags, title, &summary(iterations))
}

fn plot_error(err: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("could not draw the plot: {err}")
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;
type Drawn = std::result::Result<(), Box<dyn std::error::Error>>;

/// What a shape drawn in a status colour gets, in drawing order: its class and its `<title>`.
struct Tag {
    class: String,
    title: String,
}

fn font(size: u32) -> TextStyle<'static> {
    (FONT, size).into_font().color(&INK)
}

/// `#2 B`: the iteration's number, and its playbook letter when it named one.
pub fn mark_label(it: &Iteration) -> String {
    match it.playbook_letter() {
        Some(letter) => format!("#{} {letter}", it.number),
        None => format!("#{}", it.number),
    }
}

/// The words a mark's `<title>` holds: what was tried, what it measured, what the loop decided and why.
fn mark_title(it: &Iteration, changes: &Changes) -> String {
    let mut measured = format!(
        "{}, {}: {} ms ({} overall",
        it.status,
        it.decision,
        fmt_ms(it.latency_ms),
        fmt_change(it.change_pct)
    );
    if let Some((_, interval)) = changes.overall {
        measured += &format!(
            ", interval {:+.2}% to {:+.2}%",
            interval.low_pct, interval.high_pct
        );
    }
    measured.push(')');
    if let Some(worst) = changes.worst() {
        measured += &format!(
            "; slowest config {:+.2}% ({})",
            worst.change_pct,
            config_label(&worst.pass, &worst.test, false)
        );
    }
    format!(
        "{} {}\n{measured}\n{}",
        mark_label(it),
        it.optimization,
        it.reason
    )
}

/// The SVG's own description: what the picture shows, in one paragraph.
fn summary(iterations: &[Iteration]) -> String {
    let count = |status| iterations.iter().filter(|it| it.status == status).count();
    let attempts = iterations.len().saturating_sub(1);
    let first = iterations.first().and_then(|it| it.latency_ms);
    let best = iterations
        .iter()
        .filter(|it| it.status == Status::Keep)
        .filter_map(|it| it.latency_ms)
        .reduce(f64::min);
    format!(
        "Latency per iteration (lower is better) and each config's latency against iteration 0. \
         {attempts} attempts after the baseline: {} kept, {} reverted, {} crashed. Iteration 0: {} ms; \
         best kept: {} ms.",
        count(Status::Keep).saturating_sub(1),
        count(Status::Revert),
        count(Status::Crash),
        fmt_ms(first),
        fmt_ms(best)
    )
}

/// The fastest kept latency up to each iteration, as a step line.
fn best_so_far(iterations: &[Iteration]) -> Vec<(f64, f64)> {
    let mut best: Option<f64> = None;
    let mut line = Vec::new();
    for it in iterations {
        let previous = best;
        if it.status == Status::Keep
            && let Some(latency) = it.latency_ms
        {
            best = Some(best.map_or(latency, |b: f64| b.min(latency)));
        }
        let x = f64::from(it.number);
        if let (Some(before), Some(now)) = (previous, best)
            && before != now
        {
            line.push((x, before));
        }
        if let Some(now) = best {
            line.push((x, now));
        }
    }
    line
}

/// The latency chart's input.
struct Latency<'a> {
    iterations: &'a [Iteration],
    changes: &'a [Changes],
    band_pct: f64,
}

/// Where an iteration's mark goes on the latency chart.
#[derive(Debug, Clone, PartialEq)]
enum Place {
    /// At `y`, with its interval as an error bar, and a note beside its label.
    At {
        y: f64,
        bar: Option<(f64, f64)>,
        note: Option<String>,
    },
    /// Nothing measured (a crash): marked at the top.
    Top,
}

/// A kept attempt sits at its latency; a reverted one at its worst config's regression when that lies
/// above its latency (the reason it was reverted), so that it never reads as a gain.
fn place(it: &Iteration, changes: &Changes) -> Place {
    let Some(latency) = it.latency_ms.filter(|_| it.status != Status::Crash) else {
        return Place::Top;
    };
    let at_worst = |baseline: f64, pct: f64| baseline * (1.0 + pct / 100.0);
    if it.status == Status::Revert
        && let Some(worst) = changes.worst()
        && at_worst(it.baseline_ms, worst.change_pct) > latency
    {
        return Place::At {
            y: at_worst(it.baseline_ms, worst.change_pct),
            bar: worst.interval.map(|i| {
                (
                    at_worst(it.baseline_ms, i.low_pct),
                    at_worst(it.baseline_ms, i.high_pct),
                )
            }),
            note: Some(format!("slowest config {:+.1}%", worst.change_pct)),
        };
    }
    Place::At {
        y: latency,
        bar: changes.overall.map(|(change, i)| {
            (
                rescale(latency, change, i.low_pct),
                rescale(latency, change, i.high_pct),
            )
        }),
        note: None,
    }
}

/// The latency axis: the kept latencies and the band around the current baseline, padded, stretched
/// to the other marks up to `cap`.
struct LatencyAxis {
    /// The latest kept latency, and the band around it.
    current: Option<f64>,
    band: Option<(f64, f64)>,
    /// Marks above this are drawn at it, labelled as off the scale: one large regression must not
    /// flatten every other mark into a line.
    cap: f64,
    pad: f64,
    lo: f64,
    hi: f64,
}

impl LatencyAxis {
    fn of(iterations: &[Iteration], places: &[Place], band_pct: f64) -> LatencyAxis {
        let current = iterations
            .iter()
            .rev()
            .find(|it| it.status == Status::Keep)
            .and_then(|it| it.latency_ms);
        let band = current.map(|c| (c * (1.0 - band_pct / 100.0), c * (1.0 + band_pct / 100.0)));
        let kept = iterations
            .iter()
            .filter(|it| it.status == Status::Keep)
            .filter_map(|it| it.latency_ms);
        let (lo, hi) = span(band.into_iter().flat_map(|(a, b)| [a, b]).chain(kept));
        let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
        let cap = hi + 2.0 * (hi - lo).max(hi.abs() * 0.05);
        let drawn = places.iter().flat_map(|place| match place {
            Place::At { y, bar, .. } => {
                let (low, high) = bar.unwrap_or((*y, *y));
                vec![y.min(cap), low.min(cap), high.min(cap)]
            }
            Place::Top => Vec::new(),
        });
        let (lo, hi) = span([lo, hi].into_iter().chain(drawn));
        let pad = ((hi - lo) * 0.12).max(hi.abs() * 0.01).max(1e-9);
        // room at the top for the crash marks
        LatencyAxis {
            current,
            band,
            cap,
            pad,
            lo: lo - pad,
            hi: hi + pad * 2.0,
        }
    }
}

/// The smallest and largest of `values` (infinite for none).
fn span(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    values
        .into_iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        })
}

fn draw_latency(area: &Area, title: &str, latency: &Latency, tags: &mut Vec<Tag>) -> Drawn {
    let places: Vec<Place> = latency
        .iterations
        .iter()
        .zip(latency.changes)
        .map(|(it, changes)| place(it, changes))
        .collect();
    let axis = LatencyAxis::of(latency.iterations, &places, latency.band_pct);
    let last = latency.iterations.last().map_or(0, |it| it.number);
    let x_range = -0.5..(f64::from(last) + 0.5);

    // enough decimals that neighbouring ticks differ (microsecond kernels), and at least three
    let digits = (-((axis.hi - axis.lo) / 8.0).log10()).ceil().max(3.0) as usize;
    let (header, body) = area.split_vertically(HEADER_HEIGHT);
    header.draw(&Text::new(
        title.to_string(),
        (WIDTH as i32 / 2, 14),
        font(24).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    let mut chart = ChartBuilder::on(&body)
        .margin(14)
        .margin_right(24)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x_range.clone(), axis.lo..axis.hi)?;
    mesh(&mut chart)
        .x_labels(last as usize + 1)
        .x_label_formatter(&|x| integer_label(*x))
        .y_label_formatter(&|y| format!("{y:.digits$}"))
        .x_desc("iteration")
        .y_desc("latency, ms (geometric mean; lower is better)")
        .label_style(font(15))
        .axis_desc_style(font(15))
        .draw()?;
    draw_references(&mut chart, &x_range, &axis, latency.iterations)?;
    draw_marks(&mut chart, latency, &places, &axis, tags)?;
    // after the chart, so that the first shape in the band's colour is the band itself
    draw_legend(&header, latency.band_pct)
}

/// The band around the current baseline with the baseline through it, iteration 0's latency, and
/// the best kept latency so far.
fn draw_references(
    chart: &mut Chart,
    x_range: &Range<f64>,
    axis: &LatencyAxis,
    iterations: &[Iteration],
) -> Drawn {
    if let (Some((below, above)), Some(current)) = (axis.band, axis.current) {
        chart.draw_series(std::iter::once(Rectangle::new(
            [(x_range.start, below), (x_range.end, above)],
            BAND.filled(),
        )))?;
        chart.draw_series(LineSeries::new(
            [(x_range.start, current), (x_range.end, current)],
            BASELINE.stroke_width(1),
        ))?;
    }
    if let Some(first) = iterations.first().and_then(|it| it.latency_ms) {
        chart.draw_series(DashedLineSeries::new(
            [(x_range.start, first), (x_range.end, first)],
            6,
            4,
            FIRST.stroke_width(1),
        ))?;
    }
    chart.draw_series(LineSeries::new(
        best_so_far(iterations),
        BEST.stroke_width(2),
    ))?;
    Ok(())
}

/// An interval as a vertical bar with short caps, `half` wide on each side.
fn draw_bar(
    chart: &mut Chart,
    x: f64,
    (low, high): (f64, f64),
    half: f64,
    colour: RGBColor,
) -> Drawn {
    let style = colour.stroke_width(1);
    chart.draw_series([
        PathElement::new(vec![(x, low), (x, high)], style),
        PathElement::new(vec![(x - half, low), (x + half, low)], style),
        PathElement::new(vec![(x - half, high), (x + half, high)], style),
    ])?;
    Ok(())
}

/// One mark per iteration in its status's colour, labelled with its number and letter: a filled
/// circle kept, a ring reverted, a triangle at the top for a crash (or anything without a latency).
fn draw_marks(
    chart: &mut Chart,
    latency: &Latency,
    places: &[Place],
    axis: &LatencyAxis,
    tags: &mut Vec<Tag>,
) -> Drawn {
    let crash_y = axis.hi - axis.pad * 0.6;
    let last = latency
        .iterations
        .last()
        .map_or(0.0, |it| f64::from(it.number));
    for ((it, changes), place) in latency.iterations.iter().zip(latency.changes).zip(places) {
        let x = f64::from(it.number);
        let colour = status_colour(it.status);
        // labels in the right half read leftwards, so the last ones stay on the card
        let (side, anchor) = if x > last / 2.0 {
            (-1, HPos::Right)
        } else {
            (1, HPos::Left)
        };
        let label = font(13).pos(Pos::new(anchor, VPos::Top));
        match place {
            Place::Top => {
                chart.draw_series(std::iter::once(
                    EmptyElement::at((x, crash_y))
                        + TriangleMarker::new((0, 0), MARK_SIZE + 1, colour.filled())
                        + Text::new(
                            format!("{} crash", mark_label(it)),
                            (side * 9, -6),
                            font(15)
                                .color(&status_colour(Status::Crash))
                                .pos(Pos::new(anchor, VPos::Top)),
                        ),
                ))?;
            }
            Place::At { y, bar, note } => {
                let off_scale = *y > axis.cap;
                if let Some((low, high)) = bar.filter(|_| !off_scale) {
                    draw_bar(chart, x, (low, high.min(axis.cap)), 0.08, colour)?;
                }
                let mut text = mark_label(it);
                if let Some(note) = note {
                    text += &format!(": {note}");
                }
                if off_scale {
                    text += " \u{2191} off the scale";
                }
                chart.draw_series(std::iter::once(
                    EmptyElement::at((x, y.min(axis.cap)))
                        + Circle::new((0, 0), MARK_SIZE, mark_style(it.status))
                        + Text::new(text, (side * 8, -18), label),
                ))?;
            }
        }
        tags.push(Tag {
            class: format!("mark {}", it.status.as_str()),
            title: mark_title(it, changes),
        });
    }
    Ok(())
}

/// The mesh both charts share: horizontal grid lines only, axes in ink; each chart adds its labels.
fn mesh<'a, 'c, 'b>(
    chart: &'c mut Chart<'a, 'b>,
) -> MeshStyle<'a, 'c, RangedCoordf64, RangedCoordf64, SVGBackend<'b>> {
    let mut mesh = chart.configure_mesh();
    mesh.disable_x_mesh()
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(INK);
    mesh
}

/// Integer ticks only: iterations are whole numbers.
fn integer_label(x: f64) -> String {
    if x >= 0.0 && (x - x.round()).abs() < 1e-6 {
        format!("{}", x.round() as i64)
    } else {
        String::new()
    }
}

/// A percentage tick with its sign, and a plain 0.
fn signed_percent(value: f64) -> String {
    if value.round() == 0.0 {
        "0".to_string()
    } else {
        format!("{value:+.0}")
    }
}

/// A legend made of text, so that the only shapes in the status colours are the iterations' marks.
fn draw_legend(area: &Area, band_pct: f64) -> Drawn {
    let entries = [
        ("\u{25CF} keep".to_string(), status_colour(Status::Keep)),
        (
            "\u{25CB} revert, at its slowest config".to_string(),
            status_colour(Status::Revert),
        ),
        ("\u{25B2} crash".to_string(), status_colour(Status::Crash)),
        ("\u{2014} best so far".to_string(), BEST),
        ("- - iteration 0".to_string(), FIRST),
    ];
    let (top, bottom) = (50, 63);
    let mut x = 40;
    for (label, colour) in entries {
        let width = 22 + 6 * label.chars().count() as i32;
        area.draw(&Text::new(label, (x, top), font(15).color(&colour)))?;
        x += width;
    }
    // the band as a swatch of itself, with the baseline through it
    area.draw(&Rectangle::new([(x, top), (x + 22, bottom)], BAND.filled()))?;
    area.draw(&PathElement::new(
        [(x, (top + bottom) / 2), (x + 22, (top + bottom) / 2)],
        BASELINE,
    ))?;
    area.draw(&Text::new(
        format!("current baseline \u{00B1}{band_pct}%"),
        (x + 28, top),
        font(15).color(&BASELINE),
    ))?;
    Ok(())
}

/// One config's latency relative to iteration 0, per measured iteration.
struct ConfigSeries {
    label: String,
    points: Vec<Point>,
}

/// One iteration on a config's panel: the change against iteration 0 in percent, its interval there
/// when the rounds gave one, and the words of its `<title>`.
struct Point {
    x: f64,
    y: f64,
    status: Status,
    bar: Option<(f64, f64)>,
    title: String,
}

fn same_config(a: &Measurement, b: &Measurement) -> bool {
    a.pass == b.pass && a.test == b.test
}

fn config_series(iterations: &[Iteration], changes: &[Changes]) -> Vec<ConfigSeries> {
    let Some(first) = iterations.first() else {
        return Vec::new();
    };
    let several_passes = first
        .configs
        .iter()
        .any(|m| m.pass != first.configs[0].pass);
    first
        .configs
        .iter()
        .map(|config| {
            let label = config_label(&config.pass, &config.test, several_passes);
            let points = iterations
                .iter()
                .zip(changes)
                .filter(|(it, _)| it.status != Status::Crash)
                .filter_map(|(it, changes)| point(it, changes, config, &label))
                .collect();
            ConfigSeries { label, points }
        })
        .collect()
}

/// Iteration `it` on the panel of `config` (iteration 0's measurement), if it measured that config.
fn point(it: &Iteration, changes: &Changes, config: &Measurement, label: &str) -> Option<Point> {
    let now = it.configs.iter().find(|m| same_config(m, config))?;
    let against_first = |value: f64| crate::stats::change_pct(config.value, value);
    let outcome = changes
        .configs
        .iter()
        .find(|c| c.pass == config.pass && c.test == config.test);
    let bar = outcome.and_then(|c| {
        let interval = c.interval?;
        Some((
            against_first(rescale(now.value, c.change_pct, interval.low_pct)),
            against_first(rescale(now.value, c.change_pct, interval.high_pct)),
        ))
    });
    let y = against_first(now.value);
    let mut title = format!(
        "{} {label}: {y:+.2}% against iteration 0 ({})",
        mark_label(it),
        it.status
    );
    if let Some(c) = outcome {
        title += &format!("; {:+.2}% against its baseline", c.change_pct);
        if let Some(i) = c.interval {
            title += &format!(" ({:+.2}% to {:+.2}%)", i.low_pct, i.high_pct);
        }
    }
    Some(Point {
        x: f64::from(it.number),
        y,
        status: it.status,
        bar,
        title,
    })
}

/// The parameters in a test id's brackets (`test_perf[cutile-4096-float16]` -> `4096-float16`), which
/// is what tells the configs apart; the backend prefix and `torch.` say nothing here.
pub fn config_label(pass: &str, test: &str, with_pass: bool) -> String {
    let params = match (test.find('['), test.rfind(']')) {
        (Some(open), Some(close)) if open < close => &test[open + 1..close],
        _ => test.rsplit("::").next().unwrap_or(test),
    };
    let params = params.strip_prefix("cutile-").unwrap_or(params);
    let label = params.replace("torch.", "");
    if with_pass {
        format!("{label} ({pass})")
    } else {
        label
    }
}

/// The panels' shared percent scale: the kept points and the band, stretched to the reverted ones up
/// to a cap (drawn at the cap above it), so one large regression does not flatten every panel.
struct PanelAxis {
    lo: f64,
    hi: f64,
    cap: f64,
}

impl PanelAxis {
    fn of(configs: &[ConfigSeries], band_pct: f64) -> PanelAxis {
        let points = || configs.iter().flat_map(|c| &c.points);
        let kept = points().filter(|p| p.status == Status::Keep).map(|p| p.y);
        let (_, kept_hi) = span([-band_pct, band_pct].into_iter().chain(kept));
        let cap = kept_hi + 4.0 * band_pct;
        let all = points().flat_map(|p| {
            let (low, high) = p.bar.unwrap_or((p.y, p.y));
            [p.y.min(cap), low.min(cap), high.min(cap)]
        });
        let (lo, hi) = span([-band_pct, band_pct].into_iter().chain(all));
        let pad = (hi - lo) * 0.15;
        PanelAxis {
            lo: lo - pad,
            hi: hi + pad,
            cap,
        }
    }
}

fn draw_panels(
    area: &Area,
    configs: &[ConfigSeries],
    last: u32,
    band_pct: f64,
    tags: &mut Vec<Tag>,
) -> Drawn {
    let (header, grid) = area.split_vertically(PANELS_HEADER);
    header.draw(&Text::new(
        format!(
            "each config against iteration 0, in % (lower is better): filled kept, hollow reverted; band \u{00B1}{band_pct}%"
        ),
        (24, 10),
        font(17),
    ))?;
    let axis = PanelAxis::of(configs, band_pct);
    let x_range = -0.5..(f64::from(last) + 0.5);
    let rows = configs.len().div_ceil(PANEL_COLUMNS);
    let cells = grid.margin(0, 0, 0, 16).split_evenly((rows, PANEL_COLUMNS));
    for (config, cell) in configs.iter().zip(&cells) {
        let kept: Vec<(f64, f64)> = config
            .points
            .iter()
            .filter(|p| p.status == Status::Keep)
            .map(|p| (p.x, p.y))
            .collect();
        let latest = kept.last().map_or(0.0, |p| p.1);
        let caption_colour = if latest > band_pct { WORSE } else { INK };
        let mut chart = ChartBuilder::on(cell)
            .caption(
                format!("{} {latest:+.1}%", config.label),
                font(14).color(&caption_colour),
            )
            .margin(8)
            .margin_left(6)
            .x_label_area_size(34)
            .y_label_area_size(52)
            .build_cartesian_2d(x_range.clone(), axis.lo..axis.hi)?;
        mesh(&mut chart)
            .x_labels(last as usize + 1)
            .y_labels(4)
            .x_label_formatter(&|x| integer_label(*x))
            .y_label_formatter(&|y| signed_percent(*y))
            .x_desc("iteration")
            .y_desc("% vs #0")
            .label_style(font(12))
            .axis_desc_style(font(12))
            .draw()?;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(x_range.start, -band_pct), (x_range.end, band_pct)],
            BAND.filled(),
        )))?;
        chart.draw_series(LineSeries::new(kept, TREND.stroke_width(2)))?;
        for point in &config.points {
            let colour = status_colour(point.status);
            if let Some((low, high)) = point.bar.filter(|_| point.y <= axis.cap) {
                draw_bar(&mut chart, point.x, (low, high.min(axis.cap)), 0.12, colour)?;
            }
            chart.draw_series(std::iter::once(Circle::new(
                (point.x, point.y.min(axis.cap)),
                3,
                mark_style(point.status),
            )))?;
            tags.push(Tag {
                class: format!("point {}", point.status.as_str()),
                title: point.title.clone(),
            });
        }
    }
    Ok(())
}

/// A colour as the SVG backend writes it.
fn hex(RGBColor(r, g, b): RGBColor) -> String {
    format!("#{r:02X}{g:02X}{b:02X}")
}

/// The status whose colour `colour` is, if it is one.
fn status_of(colour: &str) -> Option<Status> {
    [Status::Keep, Status::Revert, Status::Crash]
        .into_iter()
        .find(|&s| colour.eq_ignore_ascii_case(&hex(status_colour(s))))
}

fn write_text_element(
    writer: &mut quick_xml::Writer<Vec<u8>>,
    name: &str,
    text: &str,
) -> Result<()> {
    writer.write_event(Event::Start(BytesStart::new(name)))?;
    writer.write_event(Event::Text(BytesText::new(text)))?;
    writer.write_event(Event::End(BytesEnd::new(name)))?;
    Ok(())
}

/// Gives the SVG its `<title>` and `<desc>`, each shape drawn in a status colour its class (`mark
/// revert` on the latency chart, `point revert` on a panel) and `<title>` (`tags`, in drawing order),
/// and the first band `class="band"`, so that a reader, a test or a style sheet can find them;
/// everything else passes through byte for byte.
fn tag_marks(svg: &str, tags: Vec<Tag>, title: &str, desc: &str) -> Result<String> {
    let mut tags = tags.into_iter();
    let mut band_found = false;
    let mut reader = quick_xml::Reader::from_str(svg);
    let mut writer = quick_xml::Writer::new(Vec::new());
    loop {
        match reader.read_event()? {
            Event::Eof => break,
            Event::Start(root) if root.name().as_ref() == "svg" => {
                let mut root = root.into_owned();
                root.push_attribute(("role", "img"));
                writer.write_event(Event::Start(root))?;
                write_text_element(&mut writer, "title", title)?;
                write_text_element(&mut writer, "desc", desc)?;
            }
            Event::Empty(element) if matches!(element.name().as_ref(), "circle" | "polygon") => {
                let coloured = element
                    .attributes()
                    .flatten()
                    .filter(|a| matches!(a.key.as_ref(), "fill" | "stroke"))
                    .any(|a| status_of(&a.value).is_some());
                if !coloured {
                    writer.write_event(Event::Empty(element))?;
                    continue;
                }
                let tag = tags
                    .next()
                    .ok_or_else(|| anyhow!("the plot drew a mark it has no title for"))?;
                let name = element.name().as_ref().to_string();
                let mut element = element.into_owned();
                element.push_attribute(("class", tag.class.as_str()));
                writer.write_event(Event::Start(element))?;
                write_text_element(&mut writer, "title", &tag.title)?;
                writer.write_event(Event::End(BytesEnd::new(name)))?;
            }
            Event::Empty(element)
                if !band_found
                    && element.name().as_ref() == "rect"
                    && element.attributes().flatten().any(|a| {
                        a.key.as_ref() == "fill" && a.value.eq_ignore_ascii_case(&hex(BAND))
                    }) =>
            {
                band_found = true;
                let mut element = element.into_owned();
                element.push_attribute(("class", "band"));
                writer.write_event(Event::Empty(element))?;
            }
            other => writer.write_event(other)?,
        }
    }
    if tags.next().is_some() {
        anyhow::bail!("the plot has titles for marks it did not draw");
    }
    Ok(String::from_utf8(writer.into_inner())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::Decision;
    use crate::session::tests::iteration;

    /// How many shapes carry each class, in the order keep, revert, crash.
    fn count_marks(svg: &str) -> [usize; 3] {
        let mut reader = quick_xml::Reader::from_str(svg);
        let mut counts = [0; 3];
        loop {
            match reader.read_event().unwrap() {
                Event::Eof => break,
                Event::Empty(e) | Event::Start(e) => {
                    for a in e.attributes().flatten() {
                        if a.key.as_ref() == "class" {
                            match a.value.as_ref() {
                                "mark keep" => counts[0] += 1,
                                "mark revert" => counts[1] += 1,
                                "mark crash" => counts[2] += 1,
                                _ => {}
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        counts
    }

    fn texts(svg: &str) -> Vec<String> {
        let mut reader = quick_xml::Reader::from_str(svg);
        let mut found = Vec::new();
        loop {
            match reader.read_event().unwrap() {
                Event::Eof => break,
                Event::Text(t) => found.push(
                    t.xml_content(quick_xml::XmlVersion::Implicit1_0)
                        .trim()
                        .to_string(),
                ),
                _ => {}
            }
        }
        found
    }

    fn session() -> Vec<Iteration> {
        vec![
            iteration(0, Status::Keep, Some(0.0), Decision::Continue),
            iteration(1, Status::Keep, Some(-6.0), Decision::Continue),
            iteration(2, Status::Revert, Some(4.0), Decision::TryNext),
            iteration(3, Status::Crash, None, Decision::TryNext),
            iteration(4, Status::Keep, Some(-8.0), Decision::Continue),
            iteration(5, Status::Revert, Some(-1.0), Decision::TryNext),
        ]
    }

    #[test]
    fn marks_every_attempt_by_its_status() {
        let svg = svg("vector_add", &session(), &BTreeMap::new(), 2.0).unwrap();
        assert_eq!(count_marks(&svg), [3, 2, 1]);
        let texts = texts(&svg);
        assert!(texts.iter().any(|t| t == "#3 crash"), "{texts:?}");
        assert!(texts.iter().any(|t| t == "vector_add"), "{texts:?}");
    }

    #[test]
    fn the_same_history_gives_the_same_bytes() {
        let first = svg("k", &session(), &BTreeMap::new(), 2.0).unwrap();
        assert_eq!(first, svg("k", &session(), &BTreeMap::new(), 2.0).unwrap());
        assert!(first.starts_with("<svg"), "{}", &first[..40]);
    }

    #[test]
    fn a_baseline_alone_is_one_kept_mark() {
        let only = [iteration(0, Status::Keep, Some(0.0), Decision::Continue)];
        assert_eq!(
            count_marks(&svg("k", &only, &BTreeMap::new(), 2.0).unwrap()),
            [1, 0, 0]
        );
    }

    #[test]
    fn a_revert_sits_at_its_slowest_config_never_as_a_gain() {
        let mut kept = iteration(1, Status::Keep, Some(0.0), Decision::Continue);
        kept.configs[0].value = 0.1;
        // 3% faster overall, but its one config 10% slower than iteration 1's
        let mut reverted = iteration(2, Status::Revert, Some(-3.0), Decision::TryNext);
        reverted.configs[0].value = 0.11;
        let session = [
            iteration(0, Status::Keep, Some(0.0), Decision::Continue),
            kept,
            reverted,
        ];
        let changes = changes::of_session(&session, &BTreeMap::new());
        match place(&session[2], &changes[2]) {
            Place::At { y, bar, note } => {
                assert!((y - 1.1).abs() < 1e-9, "{y}");
                assert_eq!(bar, None);
                assert_eq!(note.as_deref(), Some("slowest config +10.0%"));
            }
            Place::Top => panic!("a measured revert is drawn at its place"),
        }
        assert_eq!(
            place(&session[1], &changes[1]),
            Place::At {
                y: 1.0,
                bar: None,
                note: None
            }
        );
    }

    #[test]
    fn every_mark_and_the_picture_have_titles() {
        let svg = svg("vector_add", &session(), &BTreeMap::new(), 2.0).unwrap();
        assert!(
            svg.contains(" role=\"img\"><title>vector_add</title><desc>Latency per iteration"),
            "{}",
            &svg[..300]
        );
        for n in 0..6 {
            assert!(svg.contains(&format!("<title>#{n} opt {n}\n")), "#{n}");
        }
        // the panels' points carry titles too: one config, five measured iterations
        assert_eq!(svg.matches("class=\"point ").count(), 5);
        assert_eq!(svg.matches("class=\"band\"").count(), 1);
    }

    #[test]
    fn best_so_far_steps_down_only_on_kept_gains() {
        let line = best_so_far(&session());
        let y = |i: usize| line[i].1;
        assert_eq!(line.first().map(|p| p.0), Some(0.0));
        assert!(line.windows(2).all(|w| w[1].1 <= w[0].1), "{line:?}");
        assert_eq!(line.last().map(|p| p.0), Some(5.0));
        assert!(y(line.len() - 1) < y(0));
    }

    #[test]
    fn labels_configs_by_their_parameters() {
        let test = "tests.ops.test_x::test_perf[cutile-262144-1024-torch.float16]";
        assert_eq!(config_label("forward", test, false), "262144-1024-float16");
        assert_eq!(
            config_label("forward", test, true),
            "262144-1024-float16 (forward)"
        );
    }
}
