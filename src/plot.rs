//! The session as a picture: latency per iteration with every attempt marked by its status, and one
//! small chart per config showing its latency relative to iteration 0 across the kept iterations.
//!
//! Pure: iterations in, SVG text out, so the same history always gives the same bytes. Text stays SVG
//! text (selectable, no font files needed); the background is an opaque light card so that the picture
//! reads the same in light and dark viewers.

use std::ops::Range;

use anyhow::{Result, anyhow};
use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use quick_xml::events::Event;

use crate::decision::Status;
use crate::records::Measurement;
use crate::session::{Iteration, Session};

pub const WIDTH: u32 = 960;
const MAIN_HEIGHT: u32 = 440;
/// Title and legend, above the latency chart.
const HEADER_HEIGHT: u32 = 70;
const PANEL_COLUMNS: usize = 3;
const PANEL_HEIGHT: u32 = 170;
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

/// The SVG of a session: `iterations` oldest first (iteration 0 the baseline), `band_pct` the
/// per-config regression limit drawn around the current baseline.
pub fn svg(title: &str, iterations: &[Iteration], band_pct: f64) -> Result<String> {
    let configs = config_series(iterations);
    let rows = configs.len().div_ceil(PANEL_COLUMNS) as u32;
    let panels_height = if rows == 0 {
        0
    } else {
        PANELS_HEADER + rows * PANEL_HEIGHT
    };
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, MAIN_HEIGHT + panels_height))
            .into_drawing_area();
        root.fill(&BACKGROUND).map_err(plot_error)?;
        let (main, panels) = root.split_vertically(MAIN_HEIGHT);
        draw_latency(&main, title, iterations, band_pct).map_err(plot_error)?;
        if rows > 0 {
            draw_panels(&panels, &configs, band_pct).map_err(plot_error)?;
        }
        root.present().map_err(plot_error)?;
    }
    tag_marks(&out)
}

fn plot_error(err: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("could not draw the plot: {err}")
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;
type Drawn = std::result::Result<(), Box<dyn std::error::Error>>;

fn font(size: u32) -> TextStyle<'static> {
    (FONT, size).into_font().color(&INK)
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

/// The latency axis: the measured latencies and the band around the current baseline, padded.
struct LatencyAxis {
    /// The latest kept latency, and the band around it.
    current: Option<f64>,
    band: Option<(f64, f64)>,
    pad: f64,
    lo: f64,
    hi: f64,
}

impl LatencyAxis {
    fn of(iterations: &[Iteration], band_pct: f64) -> LatencyAxis {
        let measured: Vec<f64> = iterations.iter().filter_map(|it| it.latency_ms).collect();
        let current = iterations
            .iter()
            .rev()
            .find(|it| it.status == Status::Keep)
            .and_then(|it| it.latency_ms);
        let band = current.map(|c| (c * (1.0 - band_pct / 100.0), c * (1.0 + band_pct / 100.0)));
        let (lo, hi) = band
            .into_iter()
            .flat_map(|(a, b)| [a, b])
            .chain(measured.iter().copied())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            });
        let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
        let pad = ((hi - lo) * 0.12).max(hi.abs() * 0.01).max(1e-9);
        // room at the top for the crash marks
        LatencyAxis {
            current,
            band,
            pad,
            lo: lo - pad,
            hi: hi + pad * 2.0,
        }
    }
}

fn draw_latency(area: &Area, title: &str, iterations: &[Iteration], band_pct: f64) -> Drawn {
    let axis = LatencyAxis::of(iterations, band_pct);
    let last = iterations.last().map_or(0, |it| it.number);
    let x_range = -0.5..(f64::from(last) + 0.5);

    let (header, body) = area.split_vertically(HEADER_HEIGHT);
    header.draw(&Text::new(
        title.to_string(),
        (WIDTH as i32 / 2, 14),
        font(24).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    draw_legend(&header, band_pct)?;
    let mut chart = ChartBuilder::on(&body)
        .margin(14)
        .margin_right(24)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x_range.clone(), axis.lo..axis.hi)?;
    mesh(&mut chart)
        .x_labels(last as usize + 1)
        .x_label_formatter(&|x| integer_label(*x))
        .y_label_formatter(&|y| format!("{y:.3}"))
        .x_desc("iteration")
        .y_desc("latency (ms, geometric mean over configs)")
        .label_style(font(15))
        .axis_desc_style(font(16))
        .draw()?;
    draw_references(&mut chart, &x_range, &axis, iterations)?;
    draw_marks(&mut chart, iterations, axis.hi - axis.pad * 0.6)
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

/// One mark per iteration in its status's colour: a filled circle kept, a ring reverted, and a
/// labelled triangle at `crash_y` for a crash (or anything without a latency).
fn draw_marks(chart: &mut Chart, iterations: &[Iteration], crash_y: f64) -> Drawn {
    for it in iterations {
        let x = f64::from(it.number);
        let colour = status_colour(it.status);
        match (it.status, it.latency_ms) {
            (Status::Crash, _) | (_, None) => {
                chart.draw_series(std::iter::once(
                    EmptyElement::at((x, crash_y))
                        + TriangleMarker::new((0, 0), MARK_SIZE + 1, colour.filled())
                        + Text::new(
                            format!("#{} crash", it.number),
                            (9, -6),
                            font(15).color(&status_colour(Status::Crash)),
                        ),
                ))?;
            }
            (Status::Keep, Some(y)) => {
                chart.draw_series(std::iter::once(Circle::new(
                    (x, y),
                    MARK_SIZE,
                    colour.filled(),
                )))?;
            }
            (Status::Revert, Some(y)) => {
                chart.draw_series(std::iter::once(Circle::new(
                    (x, y),
                    MARK_SIZE,
                    colour.stroke_width(2),
                )))?;
            }
        }
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
        ("\u{25CB} revert".to_string(), status_colour(Status::Revert)),
        ("\u{25B2} crash".to_string(), status_colour(Status::Crash)),
        ("\u{2014} best so far".to_string(), BEST),
        ("- - iteration 0".to_string(), FIRST),
    ];
    let (top, bottom) = (50, 63);
    let mut x = 100;
    for (label, colour) in entries {
        let width = 18 + 8 * label.chars().count() as i32;
        area.draw(&Text::new(label, (x, top), font(16).color(&colour)))?;
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
        font(16).color(&BASELINE),
    ))?;
    Ok(())
}

/// One config's latency relative to iteration 0, per kept iteration.
struct ConfigSeries {
    label: String,
    points: Vec<(f64, f64)>,
}

fn same_config(a: &Measurement, b: &Measurement) -> bool {
    a.pass == b.pass && a.test == b.test
}

fn config_series(iterations: &[Iteration]) -> Vec<ConfigSeries> {
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
        .map(|config| ConfigSeries {
            label: config_label(config, several_passes),
            points: iterations
                .iter()
                .filter(|it| it.status == Status::Keep)
                .filter_map(|it| {
                    let now = it.configs.iter().find(|m| same_config(m, config))?;
                    Some((
                        f64::from(it.number),
                        (now.value - config.value) / config.value * 100.0,
                    ))
                })
                .collect(),
        })
        .collect()
}

/// The parameters in a test id's brackets (`test_perf[cutile-4096-float16]` -> `4096-float16`), which
/// is what tells the configs apart; the backend prefix and `torch.` say nothing here.
fn config_label(config: &Measurement, with_pass: bool) -> String {
    let params = match (config.test.find('['), config.test.rfind(']')) {
        (Some(open), Some(close)) if open < close => &config.test[open + 1..close],
        _ => config.test.rsplit("::").next().unwrap_or(&config.test),
    };
    let params = params.strip_prefix("cutile-").unwrap_or(params);
    let label = params.replace("torch.", "");
    if with_pass {
        format!("{label} ({})", config.pass)
    } else {
        label
    }
}

fn draw_panels(area: &Area, configs: &[ConfigSeries], band_pct: f64) -> Drawn {
    let (header, grid) = area.split_vertically(PANELS_HEADER);
    header.draw(&Text::new(
        format!(
            "latency of each config vs iteration 0 (%, kept iterations; band \u{00B1}{band_pct}%)"
        ),
        (24, 10),
        font(18),
    ))?;
    let values = configs.iter().flat_map(|c| c.points.iter().map(|p| p.1));
    let (lo, hi) = values.fold((-band_pct, band_pct), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let pad = (hi - lo) * 0.1;
    let y_range = (lo - pad)..(hi + pad);
    let x_end = configs
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.0))
        .fold(0.0, f64::max);
    let rows = configs.len().div_ceil(PANEL_COLUMNS);
    let cells = grid.margin(0, 0, 0, 16).split_evenly((rows, PANEL_COLUMNS));
    for (config, cell) in configs.iter().zip(&cells) {
        let last = config.points.last().map_or(0.0, |p| p.1);
        let caption_colour = if last > band_pct { WORSE } else { INK };
        let mut chart = ChartBuilder::on(cell)
            .caption(
                format!("{} {:+.1}%", config.label, last),
                font(14).color(&caption_colour),
            )
            .margin(8)
            .margin_left(14)
            .x_label_area_size(20)
            .y_label_area_size(40)
            .build_cartesian_2d(-0.3..(x_end + 0.3), y_range.clone())?;
        mesh(&mut chart)
            .x_labels(x_end as usize + 1)
            .y_labels(4)
            .x_label_formatter(&|x| integer_label(*x))
            .y_label_formatter(&|y| signed_percent(*y))
            .label_style(font(13))
            .draw()?;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(-0.3, -band_pct), (x_end + 0.3, band_pct)],
            BAND.filled(),
        )))?;
        chart.draw_series(LineSeries::new(
            config.points.iter().copied(),
            TREND.stroke_width(2),
        ))?;
        chart.draw_series(
            config
                .points
                .iter()
                .map(|&p| Circle::new(p, 3, TREND.filled())),
        )?;
    }
    Ok(())
}

/// The class that names a mark of this colour (`mark keep`), if it is a status colour.
fn mark_class(colour: &str) -> Option<String> {
    [Status::Keep, Status::Revert, Status::Crash]
        .into_iter()
        .find(|&s| {
            let RGBColor(r, g, b) = status_colour(s);
            colour.eq_ignore_ascii_case(&format!("#{r:02X}{g:02X}{b:02X}"))
        })
        .map(|s| format!("mark {}", s.as_str()))
}

/// Adds `class="mark <status>"` to every shape drawn in a status colour, so that a reader (or a test,
/// or a style sheet) can find the marks; everything else passes through byte for byte.
fn tag_marks(svg: &str) -> Result<String> {
    let mut reader = quick_xml::Reader::from_str(svg);
    let mut writer = quick_xml::Writer::new(Vec::new());
    loop {
        let event = reader.read_event()?;
        let event = match event {
            Event::Eof => break,
            Event::Empty(element) if matches!(element.name().as_ref(), "circle" | "polygon") => {
                let class = element
                    .attributes()
                    .flatten()
                    .filter(|a| matches!(a.key.as_ref(), "fill" | "stroke"))
                    .find_map(|a| mark_class(&a.value));
                let mut element = element.into_owned();
                if let Some(class) = class {
                    element.push_attribute(("class", class.as_str()));
                }
                Event::Empty(element)
            }
            other => other,
        };
        writer.write_event(event)?;
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
        let svg = svg("vector_add", &session(), 2.0).unwrap();
        assert_eq!(count_marks(&svg), [3, 2, 1]);
        let texts = texts(&svg);
        assert!(texts.iter().any(|t| t == "#3 crash"), "{texts:?}");
        assert!(texts.iter().any(|t| t == "vector_add"), "{texts:?}");
    }

    #[test]
    fn the_same_history_gives_the_same_bytes() {
        let first = svg("k", &session(), 2.0).unwrap();
        assert_eq!(first, svg("k", &session(), 2.0).unwrap());
        assert!(first.starts_with("<svg"), "{}", &first[..40]);
    }

    #[test]
    fn a_baseline_alone_is_one_kept_mark() {
        let only = [iteration(0, Status::Keep, Some(0.0), Decision::Continue)];
        assert_eq!(count_marks(&svg("k", &only, 2.0).unwrap()), [1, 0, 0]);
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
        let config = Measurement {
            pass: "forward".into(),
            test: "tests.ops.test_x::test_perf[cutile-262144-1024-torch.float16]".into(),
            value: 1.0,
        };
        assert_eq!(config_label(&config, false), "262144-1024-float16");
        assert_eq!(config_label(&config, true), "262144-1024-float16 (forward)");
    }
}
