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

mod latency;
mod panels;
mod tags;

use std::collections::BTreeMap;

use anyhow::{Result, anyhow};
use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::record::changes::{self, Changes};
use crate::record::session::{Iteration, Session, fmt_change, fmt_ms};
use crate::rules::decision::Estimate;
use crate::rules::decision::Status;

use latency::{Latency, draw_latency};
pub use panels::config_label;
use panels::{config_series, draw_panels};
use tags::tag_marks;

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

/// The smallest and largest of `values` (infinite for none).
fn span(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    values
        .into_iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::session::tests::iteration;
    use crate::rules::decision::Decision;
    use latency::{Place, best_so_far, place};
    use quick_xml::events::Event;

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
}
