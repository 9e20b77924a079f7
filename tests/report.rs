//! `report` through the real binary on the fixture, in the demo's shape (a keep, a revert for one slower
//! config although faster overall, a crash): the page holds every iteration and reason, fetches
//! nothing, is the same bytes each time, says what it lacks without the notes, and, opened in headless
//! Chromium, shows a picture with one mark per iteration and the revert above the baseline band.
//!
//! The browser test needs Chromium, which `.ci/run` installs (Debian's `chromium`): ignored by a plain
//! `cargo test`, which lists it so with the reason; `cargo test --test tests -- --ignored report::` runs it,
//! and fails it where no Chromium is on PATH.

use crate::support;

use std::io::Read;
use std::path::Path;
use std::process::Command;

use support::{Fixture, text};

/// The demo's session on the fixture.
fn demo_session() -> Fixture {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.08, 0.8);
    f.step_json(&["--opt", "G", "tile size 256"]);
    // large configs faster, small ones 10% slower: faster overall, reverted
    f.set_latency(0.088, 0.6);
    f.step_json(&["--opt", "B", "persistent <scheduling> & more"]);
    f.edit_kernel("CRASH = \"\"", "CRASH = \"exception\"");
    f.step_json(&["--opt", "E", "latency hints"]);
    f
}

fn report_json(f: &Fixture, args: &[&str]) -> serde_json::Value {
    let mut full = vec!["report", "--json"];
    full.extend_from_slice(args);
    serde_json::from_str(&f.ok(&full)).unwrap()
}

/// What HTML text shows as `text`.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[test]
fn the_page_holds_every_iteration_and_reason_and_fetches_nothing() {
    let f = demo_session();
    let report = report_json(&f, &[]);
    assert_eq!(report["iterations"], 3);
    assert_eq!(report["missing"], serde_json::json!([]));
    let path = report["report"].as_str().unwrap();
    assert!(path.ends_with("sandbox/perf_results.html"), "{path}");
    let page = std::fs::read_to_string(path).unwrap();

    let reasons = f.git(&[
        "log",
        "--format=%(trailers:key=Cutile-Perf-Reason,valueonly)",
    ]);
    let reasons: Vec<&str> = reasons.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(reasons.len(), 4, "{reasons:?}");
    for reason in reasons {
        assert!(page.contains(&escaped(reason)), "reason {reason:?} missing");
    }
    for n in 0..4 {
        assert!(page.contains(&format!("<article id=\"iteration-{n}\" class=\"iteration ")));
    }
    assert!(page.contains("persistent &lt;scheduling&gt; &amp; more"));
    // nothing fetched: no URL, no external script, style sheet, image or frame
    for fetch in ["://", "<script", "<link", "<img", "<iframe", "url("] {
        assert!(!page.contains(fetch), "the page holds {fetch:?}");
    }
    // the diffs (iteration 1's commit, iteration 2's attempt) and the paired rounds' intervals
    assert!(page.contains("<span class=\"add\">+LATENCY_MS = {&quot;small&quot;: 0.088000"));
    assert!(page.contains("<span class=\"add\">+CRASH = &quot;exception&quot;</span>"));
    assert!(
        page.contains("+10.00%</td><td class=\"num\">+"),
        "an interval"
    );
    assert!(page.contains("class=\"mark revert\""));
    // the revert, faster overall, names in its change cell the config that failed it, never a gain
    let row = page.split("<tr class=\"revert\">").nth(1).unwrap();
    let row = row.split("</tr>").next().unwrap();
    assert!(!row.contains("<td class=\"num\">-"), "{row}");
    assert!(
        row.contains("[cutile-small] forward: +10.00%</td>"),
        "{row}"
    );
    let subjects = f.git(&["log", "--format=%s"]);
    assert!(
        subjects.contains("#2 revert (test_perf[cutile-small] forward: +10.00%): "),
        "{subjects}"
    );

    // byte-stable, and `table --write` writes the same page
    let again = report_json(&f, &["--out", "again.html"]);
    assert_eq!(again["report"], "again.html");
    assert_eq!(std::fs::read_to_string(f.path("again.html")).unwrap(), page);
    std::fs::remove_file(path).unwrap();
    let table: serde_json::Value =
        serde_json::from_str(&f.ok(&["table", "--write", "--json"])).unwrap();
    assert_eq!(table["report"].as_str(), Some(path));
    assert_eq!(std::fs::read_to_string(path).unwrap(), page);
}

#[test]
fn without_the_notes_the_page_says_what_it_lacks() {
    let f = demo_session();
    f.git(&["update-ref", "-d", "refs/notes/cutile-perf"]);
    let report = report_json(&f, &[]);
    let missing = report["missing"].to_string();
    assert!(missing.contains("the evidence notes"), "{missing}");
    let page = std::fs::read_to_string(report["report"].as_str().unwrap()).unwrap();
    assert!(page.contains("What this page lacks"));
    assert!(page.contains("no evidence note"));
    for n in 0..4 {
        assert!(page.contains(&format!("id=\"iteration-{n}\"")));
    }
    let out = f.ok_all(&["report"]);
    assert!(out.contains("without the evidence notes"), "{out}");
}

#[test]
fn report_off_a_session_branch_says_how_to_start() {
    let f = Fixture::new();
    let err = f.fails(&["report"]);
    assert!(err.contains("not on a cutile-perf session branch"), "{err}");
}

/// Chromium's path; fails the test where none is on PATH.
#[track_caller]
fn chromium() -> String {
    ["chromium", "chromium-browser"]
        .into_iter()
        .find_map(|name| which::which(name).ok())
        .map(|path| path.to_string_lossy().into_owned())
        .expect("no chromium on PATH: apt-get install chromium")
}

/// Headless Chromium on `page` with `action` (`--dump-dom`, `--screenshot=FILE`), with a fresh profile
/// and nothing that reaches the network; its stdout.
fn headless(browser: &str, page: &Path, action: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("timeout")
        .arg("120")
        .arg(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1000,1400",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(action)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium {action} failed: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// What the browser laid out: the marks it shows, and where the revert and the band are (screen y
/// grows downwards). Appended to a copy of the page, read back through `--dump-dom`.
const PROBE: &str = r#"<script>
const visible = [...document.querySelectorAll('svg .mark')].filter(m => {
  const r = m.getBoundingClientRect(); return r.width > 0 && r.height > 0;
});
const box = e => { const r = e.getBoundingClientRect(); return [r.top, r.bottom]; };
const probe = {
  marks: visible.length,
  revert: [...document.querySelectorAll('svg .mark.revert')].map(box),
  band: box(document.querySelector('svg .band')),
};
const out = document.createElement('pre'); out.id = 'probe';
out.textContent = JSON.stringify(probe);
document.body.appendChild(out);
</script>"#;

#[test]
#[ignore = "needs Chromium, which .ci/run installs (apt-get install chromium)"]
fn a_browser_shows_one_mark_per_iteration_and_the_revert_above_the_band() {
    let browser = chromium();
    let f = demo_session();
    f.ok(&["report"]);
    let page = f.path("sandbox/perf_results.html");
    let html = std::fs::read_to_string(&page).unwrap();
    let probed = f.path("probed.html");
    std::fs::write(
        &probed,
        html.replace("</body>", &format!("{PROBE}\n</body>")),
    )
    .unwrap();

    let dom = headless(&browser, &probed, "--dump-dom");
    let json = dom
        .split_once("<pre id=\"probe\">")
        .and_then(|(_, rest)| rest.split_once("</pre>"))
        .map(|(json, _)| json)
        .unwrap_or_else(|| panic!("no probe in the DOM:\n{dom}"));
    let probe: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(probe["marks"], 4, "{probe}");
    let band_top = probe["band"][0].as_f64().unwrap();
    let revert_bottom = probe["revert"][0][1].as_f64().unwrap();
    assert!(
        revert_bottom < band_top,
        "the reverted mark (bottom {revert_bottom}) is not above the band (top {band_top})"
    );

    let shot = f.path("shot.png");
    headless(&browser, &page, &format!("--screenshot={}", shot.display()));
    let image = Png::read(&std::fs::read(&shot).unwrap());
    let (background, share) = image.commonest();
    assert!(
        share < 0.97,
        "the screenshot is {:.1}% one colour ({background:?}): blank",
        share * 100.0
    );
    assert!(
        image.colours() > 40,
        "only {} colours in the screenshot",
        image.colours()
    );
}

/// A decoded 8-bit RGB or RGBA PNG, as Chromium writes screenshots: enough to tell a picture from a
/// blank page.
struct Png {
    pixels: Vec<[u8; 4]>,
}

impl Png {
    fn read(bytes: &[u8]) -> Png {
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
        let mut at = 8;
        let (mut width, mut height, mut channels) = (0usize, 0usize, 0usize);
        let mut compressed = Vec::new();
        while at + 8 <= bytes.len() {
            let length = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
            let kind = &bytes[at + 4..at + 8];
            let data = &bytes[at + 8..at + 8 + length];
            match kind {
                b"IHDR" => {
                    width = u32::from_be_bytes(data[0..4].try_into().unwrap()) as usize;
                    height = u32::from_be_bytes(data[4..8].try_into().unwrap()) as usize;
                    assert_eq!(data[8], 8, "bit depth");
                    channels = match data[9] {
                        2 => 3,
                        6 => 4,
                        other => panic!("PNG colour type {other}"),
                    };
                }
                b"IDAT" => compressed.extend_from_slice(data),
                _ => {}
            }
            at += 12 + length;
        }
        let mut raw = Vec::new();
        flate2::read::ZlibDecoder::new(&compressed[..])
            .read_to_end(&mut raw)
            .unwrap();
        let stride = width * channels;
        let mut previous = vec![0u8; stride];
        let mut pixels = Vec::with_capacity(width * height);
        for row in raw.chunks(stride + 1).take(height) {
            let (filter, line) = (row[0], &row[1..]);
            let mut current = vec![0u8; stride];
            for i in 0..stride {
                let left = if i >= channels {
                    current[i - channels]
                } else {
                    0
                };
                let up = previous[i];
                let up_left = if i >= channels {
                    previous[i - channels]
                } else {
                    0
                };
                let predicted = match filter {
                    0 => 0,
                    1 => left,
                    2 => up,
                    3 => ((u16::from(left) + u16::from(up)) / 2) as u8,
                    4 => paeth(left, up, up_left),
                    other => panic!("PNG filter {other}"),
                };
                current[i] = line[i].wrapping_add(predicted);
            }
            for pixel in current.chunks(channels) {
                pixels.push([pixel[0], pixel[1], pixel[2], *pixel.get(3).unwrap_or(&255)]);
            }
            previous = current;
        }
        assert_eq!(pixels.len(), width * height);
        Png { pixels }
    }

    /// The commonest colour and its share of the pixels.
    fn commonest(&self) -> ([u8; 4], f64) {
        let mut counts = std::collections::HashMap::new();
        for p in &self.pixels {
            *counts.entry(*p).or_insert(0usize) += 1;
        }
        let (colour, count) = counts.into_iter().max_by_key(|(_, n)| *n).unwrap();
        (colour, count as f64 / self.pixels.len() as f64)
    }

    fn colours(&self) -> usize {
        self.pixels
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len()
    }
}

fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = i16::from(a) + i16::from(b) - i16::from(c);
    let (pa, pb, pc) = (
        (p - i16::from(a)).abs(),
        (p - i16::from(b)).abs(),
        (p - i16::from(c)).abs(),
    );
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}
