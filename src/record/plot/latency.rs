//! The latency chart: one mark per iteration where its status puts it (a revert at its slowest config),
//! the best kept latency so far as a step line, the current baseline's band, and the legend above it.
//! Apart from the per-config panels because its placing of reverts and its references are its own.

use std::ops::Range;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::record::changes::{Changes, rescale};
use crate::record::session::Iteration;
use crate::rules::decision::Status;

use super::{
    Area, BAND, BASELINE, BEST, Chart, Drawn, FIRST, HEADER_HEIGHT, MARK_SIZE, Tag, WIDTH,
    draw_bar, font, integer_label, mark_label, mark_style, mark_title, mesh, span, status_colour,
};

/// The fastest kept latency up to each iteration, as a step line.
pub(super) fn best_so_far(iterations: &[Iteration]) -> Vec<(f64, f64)> {
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
pub(super) struct Latency<'a> {
    pub(super) iterations: &'a [Iteration],
    pub(super) changes: &'a [Changes],
    pub(super) band_pct: f64,
}

/// Where an iteration's mark goes on the latency chart.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Place {
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
pub(super) fn place(it: &Iteration, changes: &Changes) -> Place {
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

pub(super) fn draw_latency(
    area: &Area,
    title: &str,
    latency: &Latency,
    tags: &mut Vec<Tag>,
) -> Drawn {
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
