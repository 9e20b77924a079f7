//! The per-config panels: each config's latency relative to iteration 0 across the measured
//! iterations, one small chart per config under the latency chart. Apart from the latency chart
//! because its series are gathered per config, not per iteration.

use plotters::prelude::*;

use crate::record::changes::{Changes, rescale};
use crate::record::session::Iteration;
use crate::rules::decision::Status;
use crate::rules::records::Measurement;

use super::{
    Area, BAND, Drawn, INK, PANEL_COLUMNS, PANELS_HEADER, TREND, Tag, WORSE, draw_bar, font,
    integer_label, mark_label, mark_style, mesh, signed_percent, span, status_colour,
};

/// One config's latency relative to iteration 0, per measured iteration.
pub(super) struct ConfigSeries {
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

pub(super) fn config_series(iterations: &[Iteration], changes: &[Changes]) -> Vec<ConfigSeries> {
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
    let against_first = |value: f64| crate::rules::stats::change_pct(config.value, value);
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

pub(super) fn draw_panels(
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

#[cfg(test)]
mod tests {
    use super::*;

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
