//! The record-source seam: every run's records are read here, from the bytes the run wrote, by the
//! format that wrote them ([`RecordFormat::parse`]), into cases with their outcome and record.
//!
//! One format today, pytest's JUnit XML, with a case's record from one of two sources
//! ([`RecordSource`]): TileGym's `test_perf` cases call
//! `record_property("benchmark", {"cutile": {"forward": {...}}})`, which pytest writes as the dict's repr
//! into `<property name="benchmark" value="...">`; some forks print `Cutile: {'forward': {...}} ms`
//! instead, which `-o junit_logging=system-out` puts into the case's `<system-out>`. The warm workers
//! write the same JUnit file per repetition. Adding a format (pytest-benchmark's JSON, say) is its parser,
//! a [`RecordFormat`] variant and its row in `FORMATS`, and a [`RecordSource`] when its records are
//! shaped otherwise.

use std::fmt;
use std::path::Path;

use anyhow::{Context, Result, bail};
use quick_xml::events::{BytesStart, Event};

use crate::rules::hint::hinted;
use crate::rules::pyliteral::{self, PyValue};

/// A baseline config faster than this is launch-bound: an empty kernel's launch and synchronization
/// cost a few microseconds, so its time is mostly the launch's, which no change to the kernel moves.
pub const LAUNCH_BOUND_MS: f64 = 0.010;

/// What pytest reported for one test case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseOutcome {
    Passed,
    Failed(String),
    Error(String),
    Skipped,
}

/// One test case of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseReport {
    /// `classname::name`, unique within a run and stable across runs.
    pub id: String,
    pub outcome: CaseOutcome,
    /// Its benchmark record, if it wrote one.
    pub record: Option<Record>,
    /// Every `cutile_perf_census` property (the tool's census plugin writes one per perf case; more
    /// than one means something else wrote one too).
    pub census_properties: Vec<String>,
}

/// Where a case's record was found, which says how it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordSource {
    /// The `benchmark` property: `{'cutile': {'forward': {...}}, ...}`, one entry per backend.
    Property,
    /// The printed line `Cutile: {'forward': {...}} ms`, the backend's passes only.
    PrintedLine,
    /// More than one printed line in one case (the text holds them all, one a line): the harness prints
    /// one, and a line the code under test printed cannot be told from it, so none is taken.
    PrintedLines,
}

/// A case's record as its source wrote it, read into numbers only when measured ([`measurements`]), so
/// that a run whose numbers are not wanted (a correctness run printing a stray line) never fails on them.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub source: RecordSource,
    /// The Python literal, as written.
    pub text: String,
}

/// The formats runs write their records in; the evidence names the format of every file it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordFormat {
    /// pytest's JUnit XML (`--junitxml`), with the tool's options (`junit_family=xunit1`,
    /// `junit_logging=system-out`). Evidence written before formats were named holds only this one.
    #[default]
    Junit,
}

/// One format as the seam knows it: its name in words, its files' extension, its parser.
struct Registration {
    format: RecordFormat,
    name: &'static str,
    extension: &'static str,
    /// The cases of a file, in the order the run wrote them; an error when the bytes are not this format.
    parse: fn(&str) -> Result<Vec<CaseReport>>,
}

/// Every format: adding one is its parser, a [`RecordFormat`] variant and a row here.
const FORMATS: [Registration; 1] = [Registration {
    format: RecordFormat::Junit,
    name: "JUnit",
    extension: "xml",
    parse: parse_junit,
}];

fn registration(format: RecordFormat) -> &'static Registration {
    FORMATS
        .iter()
        .find(|r| r.format == format)
        .expect("every format has its row in FORMATS")
}

impl RecordFormat {
    /// The cases of a run's file, in the order the run wrote them; an error when the bytes are not this
    /// format.
    pub fn parse(self, text: &str) -> Result<Vec<CaseReport>> {
        (registration(self).parse)(text)
    }

    /// The format in words (`JUnit`).
    pub fn name(self) -> &'static str {
        registration(self).name
    }

    /// The file a run named `run` writes in this format.
    pub fn file_name(self, run: &str) -> String {
        format!("{run}.{}", registration(self).extension)
    }
}

/// The bytes one run wrote, as they were read (the evidence keeps exactly these), and their format.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RecordFile {
    #[serde(default)]
    pub format: RecordFormat,
    /// Named `junit` in evidence written before formats were named.
    #[serde(alias = "junit")]
    pub text: String,
}

impl RecordFile {
    /// The file a run wrote at `path` in `format`: `None` when it wrote none, an error when it cannot be
    /// read. Read once: what is parsed is what is kept.
    pub fn read(path: &Path, format: RecordFormat) -> Option<Result<RecordFile>> {
        match std::fs::read_to_string(path) {
            Ok(text) => Some(Ok(RecordFile { format, text })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => Some(Err(e).with_context(|| format!("cannot read {}", path.display()))),
        }
    }

    pub fn cases(&self) -> Result<Vec<CaseReport>> {
        self.format.parse(&self.text)
    }
}

/// The statistic taken from each config's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statistic {
    Mean,
    Median,
    Min,
}

impl Statistic {
    /// Every statistic, in the order `--help` lists them.
    pub const ALL: &[Statistic] = &[Statistic::Mean, Statistic::Median, Statistic::Min];

    pub fn as_str(self) -> &'static str {
        match self {
            Statistic::Mean => "mean",
            Statistic::Median => "median",
            Statistic::Min => "min",
        }
    }

    pub fn parse(text: &str) -> Option<Statistic> {
        Statistic::ALL.iter().copied().find(|s| s.as_str() == text)
    }
}

impl fmt::Display for Statistic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One config's latency: a test case crossed with a pass (forward, backward, ...).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Measurement {
    pub pass: String,
    pub test: String,
    #[serde(rename = "value_ms")]
    pub value: f64,
    /// The record's mean too, where it holds one: a paired verdict reads it for a config whose median
    /// moves in whole timer ticks (`verdict::Rules::Ticked`).
    #[serde(skip)]
    pub mean: Option<f64>,
}

/// How many significant digits a config's value keeps in the trailers: a GPU timer's ticks are far coarser,
/// and a sum of them in binary floating point (`0.08799999999999998`) reads as noise.
const CONFIG_DIGITS: usize = 6;

/// A config's value as the trailers carry it, rounded to [`CONFIG_DIGITS`] significant digits. Rounding
/// a rounded value changes nothing, so a trailer written unrounded, a rounded one and the evidence's
/// exact value compare alike once each goes through here.
pub fn round_config_ms(value: f64) -> f64 {
    if !value.is_finite() || value == 0.0 {
        return value;
    }
    format!("{value:.*e}", CONFIG_DIGITS - 1)
        .parse()
        .unwrap_or(value)
}

/// The shortest latency a record may hold: 100 ns. A kernel launch alone takes microseconds, so a
/// smaller number (5e-324, a unit mistake) is a broken record, never a gain.
pub const MIN_LATENCY_MS: f64 = 1e-4;

/// Whether a record's number can be a latency: finite and at least [`MIN_LATENCY_MS`].
fn plausible_ms(value: f64) -> bool {
    value.is_finite() && value >= MIN_LATENCY_MS
}

/// The backend whose numbers the loop optimizes.
const BACKEND: &str = "cutile";

/// A `<testcase>` being read: the record is taken when it ends, the property over the printed line.
struct JunitCase {
    case: CaseReport,
    property: Option<String>,
    stdout: String,
}

impl JunitCase {
    fn end(self) -> CaseReport {
        let printed: Vec<String> = (self.stdout.lines())
            .filter_map(|line| {
                let rest = line.trim().strip_prefix("Cutile:")?;
                Some(rest.trim().trim_end_matches("ms").trim_end().to_string())
            })
            .collect();
        let record = match (self.property, printed.len()) {
            (Some(text), _) => Some(Record {
                source: RecordSource::Property,
                text,
            }),
            (None, 0) => None,
            (None, 1) => Some(Record {
                source: RecordSource::PrintedLine,
                text: printed.concat(),
            }),
            (None, _) => Some(Record {
                source: RecordSource::PrintedLines,
                text: printed.join("\n"),
            }),
        };
        CaseReport {
            record,
            ..self.case
        }
    }
}

/// Reads every `<testcase>` of a JUnit XML document.
fn parse_junit(xml: &str) -> Result<Vec<CaseReport>> {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut cases = Vec::new();
    let mut current: Option<JunitCase> = None;
    let mut in_stdout = false;
    // a file pytest could not write (a full disk) is empty: no result, never a run of no cases
    let mut any_element = false;
    loop {
        let event = reader.read_event().with_context(|| {
            format!(
                "the JUnit file is not valid XML (near byte {})",
                reader.buffer_position()
            )
        })?;
        let (element, empty) = match &event {
            Event::Start(e) => (Some(e), false),
            Event::Empty(e) => (Some(e), true),
            _ => (None, false),
        };
        if let Some(e) = element {
            any_element = true;
            if e.name().as_ref() == "testcase" {
                let case = JunitCase {
                    case: CaseReport {
                        id: case_id(e)?,
                        outcome: CaseOutcome::Passed,
                        record: None,
                        census_properties: Vec::new(),
                    },
                    property: None,
                    stdout: String::new(),
                };
                // an empty `<testcase/>` has no children: it is complete already
                if empty {
                    cases.push(case.end());
                } else {
                    current = Some(case);
                }
            } else if let Some(current) = current.as_mut() {
                let case = &mut current.case;
                match e.name().as_ref() {
                    "property" => match attribute(e, "name")?.as_deref() {
                        Some("benchmark") => current.property = attribute(e, "value")?,
                        Some("cutile_perf_census") => {
                            case.census_properties.extend(attribute(e, "value")?)
                        }
                        _ => {}
                    },
                    "failure" => {
                        case.outcome =
                            CaseOutcome::Failed(attribute(e, "message")?.unwrap_or_default())
                    }
                    "error" => {
                        case.outcome =
                            CaseOutcome::Error(attribute(e, "message")?.unwrap_or_default())
                    }
                    "skipped" => case.outcome = CaseOutcome::Skipped,
                    "system-out" if !empty => in_stdout = true,
                    _ => {}
                }
            }
            continue;
        }
        match event {
            Event::Text(t) => {
                if let (true, Some(case)) = (in_stdout, current.as_mut()) {
                    case.stdout
                        .push_str(&t.xml_content(quick_xml::XmlVersion::Implicit1_0));
                }
            }
            Event::CData(t) => {
                if let (true, Some(case)) = (in_stdout, current.as_mut()) {
                    case.stdout.push_str(&t.into_inner());
                }
            }
            Event::GeneralRef(r) => {
                if let (true, Some(case)) = (in_stdout, current.as_mut()) {
                    let resolved = match r.resolve_char_ref() {
                        Ok(Some(c)) => c.to_string(),
                        _ => quick_xml::escape::unescape(&format!("&{};", &*r))
                            .map(|s| s.into_owned())
                            .unwrap_or_default(),
                    };
                    case.stdout.push_str(&resolved);
                }
            }
            Event::End(e) => match e.name().as_ref() {
                "testcase" => cases.extend(current.take().map(JunitCase::end)),
                "system-out" => in_stdout = false,
                _ => {}
            },
            Event::Eof if !any_element => bail!(
                "the JUnit file holds no results ({} bytes): pytest could not write it",
                xml.len()
            ),
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(cases)
}

fn attribute(element: &BytesStart<'_>, name: &str) -> Result<Option<String>> {
    for attr in element.attributes() {
        let attr = attr.context("malformed XML attribute in the JUnit file")?;
        if attr.key.as_ref() == name {
            let value = attr
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .context("malformed XML attribute value in the JUnit file")?;
            return Ok(Some(value.into_owned()));
        }
    }
    Ok(None)
}

fn case_id(element: &BytesStart<'_>) -> Result<String> {
    let class = attribute(element, "classname")?.unwrap_or_default();
    let name = attribute(element, "name")?.unwrap_or_default();
    Ok(if class.is_empty() {
        name
    } else {
        format!("{class}::{name}")
    })
}

impl Record {
    /// The per-pass records (`{"forward": {...}, ...}`) of case `id`, as its source writes them.
    fn passes(&self, id: &str) -> Result<PyValue> {
        let text = &self.text;
        match self.source {
            RecordSource::Property => {
                let record = pyliteral::parse(text).with_context(|| {
                    format!(
                        "benchmark record of {id} is not a Python literal: {}",
                        abbreviate(text)
                    )
                })?;
                match record
                    .entries()
                    .find(|(k, _)| k.eq_ignore_ascii_case(BACKEND))
                {
                    Some((_, passes)) => Ok(passes.clone()),
                    None => bail!(
                        "benchmark record of {id} has no '{BACKEND}' entry: {}",
                        abbreviate(text)
                    ),
                }
            }
            RecordSource::PrintedLine => pyliteral::parse(text).with_context(|| {
                format!(
                    "printed record of {id} is not a Python literal: {}",
                    abbreviate(text)
                )
            }),
            RecordSource::PrintedLines => Err(hinted(
                format!(
                    "{id} printed {} record lines (`Cutile: ... ms`) where its harness prints one: a line \
                     the code under test printed cannot be told from the harness's, so none is taken",
                    text.lines().count()
                ),
                "remove the print of a `Cutile:` line from the kernel's code (or have the harness record \
                 the benchmark with record_property), then step again",
            )),
        }
    }
}

fn abbreviate(text: &str) -> String {
    const LIMIT: usize = 120;
    match text.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Every config's latency from the cases of a perf run. Skipped cases carry no record; any other case
/// without a usable record makes the whole run unusable: a missing number must never read as fast.
pub fn measurements(cases: &[CaseReport], statistic: Statistic) -> Result<Vec<Measurement>> {
    let mut out = Vec::new();
    for case in cases {
        match &case.outcome {
            CaseOutcome::Skipped => continue,
            CaseOutcome::Failed(msg) | CaseOutcome::Error(msg) => {
                bail!("perf case {} failed: {}", case.id, first_line(msg))
            }
            CaseOutcome::Passed => {}
        }
        let Some(record) = &case.record else {
            bail!("perf case {} gave no benchmark record", case.id)
        };
        let passes = record.passes(&case.id)?;
        let mut found = false;
        for (pass, record) in passes.entries() {
            let Some(value) = record.get(statistic.as_str()) else {
                bail!("{pass} record of {} has no '{statistic}'", case.id)
            };
            match value.as_f64() {
                Some(v) if plausible_ms(v) => {}
                Some(v) if v.is_finite() && v > 0.0 => bail!(
                    "{pass} {statistic} of {} is {v:e} ms, below {MIN_LATENCY_MS:e} ms (100 ns), which no GPU \
                     kernel launch takes: the record is broken",
                    case.id
                ),
                _ => bail!(
                    "{pass} {statistic} of {} is not a positive number: {value:?}",
                    case.id
                ),
            }
            out.push(Measurement {
                pass: pass.to_string(),
                test: case.id.clone(),
                value: value.as_f64().expect("checked above"),
                mean: record
                    .get(Statistic::Mean.as_str())
                    .and_then(|mean| mean.as_f64())
                    .filter(|&mean| plausible_ms(mean)),
            });
            found = true;
        }
        if !found {
            bail!(
                "benchmark record of {} holds no pass (forward, backward, ...)",
                case.id
            )
        }
    }
    Ok(out)
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tilegym-junit");

    fn read(name: &str) -> String {
        std::fs::read_to_string(format!("{DATA}/{name}")).unwrap()
    }

    #[test]
    fn real_rms_norm_file() {
        let cases = RecordFormat::Junit
            .parse(&read("test_rms_norm.xml"))
            .unwrap();
        assert_eq!(cases.len(), 10);
        let m = measurements(&cases, Statistic::Median).unwrap();
        assert_eq!(m.len(), 10);
        assert_eq!(m[0].pass, "forward");
        assert_eq!(
            m[0].test,
            "tests.ops.test_rms_norm.Test_RMSNorm::test_perf[cutile-static_persistent-262144-1024-torch.float16]"
        );
        assert_eq!(m[0].value, 0.2798699999999999);
        let mean = measurements(&cases, Statistic::Mean).unwrap();
        assert_eq!(mean[0].value, 0.28010342857142856);
    }

    #[test]
    fn real_silu_file_has_forward_and_backward() {
        let cases = RecordFormat::Junit
            .parse(&read("test_silu_and_mul.xml"))
            .unwrap();
        let m = measurements(&cases, Statistic::Median).unwrap();
        assert_eq!(m.len(), 2 * cases.len());
        assert_eq!(
            (m[0].pass.as_str(), m[0].value),
            ("forward", 0.05225600000000009)
        );
        assert_eq!((m[1].pass.as_str(), m[1].value), ("backward", 0.240481));
    }

    #[test]
    fn real_noise_files_parse() {
        for entry in std::fs::read_dir(format!("{DATA}/noise-h200")).unwrap() {
            let xml = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            let m =
                measurements(&RecordFormat::Junit.parse(&xml).unwrap(), Statistic::Min).unwrap();
            assert!(!m.is_empty());
        }
    }

    #[test]
    fn empty_selection_has_no_cases() {
        assert!(
            RecordFormat::Junit
                .parse(&read("test_softmax_perf_none_selected.xml"))
                .unwrap()
                .is_empty()
        );
    }

    fn junit(cases: &str) -> String {
        format!(
            r#"<?xml version="1.0"?><testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>"#
        )
    }

    #[test]
    fn printed_record_in_system_out() {
        let xml = junit(
            r#"<testcase classname="t.C" name="test_perf[a]"><system-out>noise
Cutile: {'forward': {'median': 0.5, 'kernel': 'a&lt;b&gt;'}} ms
</system-out></testcase>"#,
        );
        let m = measurements(&RecordFormat::Junit.parse(&xml).unwrap(), Statistic::Median).unwrap();
        assert_eq!(
            m,
            vec![Measurement {
                pass: "forward".into(),
                test: "t.C::test_perf[a]".into(),
                value: 0.5,
                mean: None
            }]
        );
    }

    #[test]
    fn missing_or_garbage_records_are_errors() {
        let no_record = junit(r#"<testcase classname="t" name="p"></testcase>"#);
        let err = measurements(
            &RecordFormat::Junit.parse(&no_record).unwrap(),
            Statistic::Median,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "perf case t::p gave no benchmark record");

        let nan = junit(
            r#"<testcase classname="t" name="p"><properties><property name="benchmark" value="{'cutile': {'forward': {'median': nan}}}"/></properties></testcase>"#,
        );
        let err =
            measurements(&RecordFormat::Junit.parse(&nan).unwrap(), Statistic::Median).unwrap_err();
        assert_eq!(
            err.to_string(),
            "forward median of t::p is not a positive number: Float(NaN)"
        );

        for (bad, what) in [
            ("5e-324", "is 5e-324 ms, below 1e-4 ms (100 ns)"),
            ("0.00009", "is 9e-5 ms, below 1e-4 ms (100 ns)"),
            ("0.0", "is not a positive number: Float(0.0)"),
            ("-1.5", "is not a positive number: Float(-1.5)"),
            ("inf", "is not a positive number: Float(inf)"),
        ] {
            let xml = junit(&format!(
                r#"<testcase classname="t" name="p"><properties><property name="benchmark" value="{{'cutile': {{'forward': {{'median': {bad}}}}}}}"/></properties></testcase>"#
            ));
            let err = measurements(&RecordFormat::Junit.parse(&xml).unwrap(), Statistic::Median)
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&format!("forward median of t::p {what}")),
                "{bad}: {err}"
            );
        }
        let smallest = junit(
            r#"<testcase classname="t" name="p"><properties><property name="benchmark" value="{'cutile': {'forward': {'median': 0.0001}}}"/></properties></testcase>"#,
        );
        assert!(
            measurements(
                &RecordFormat::Junit.parse(&smallest).unwrap(),
                Statistic::Median
            )
            .is_ok()
        );

        let garbage = junit(
            r#"<testcase classname="t" name="p"><properties><property name="benchmark" value="{'cutile': {"/></properties></testcase>"#,
        );
        assert!(
            measurements(
                &RecordFormat::Junit.parse(&garbage).unwrap(),
                Statistic::Median
            )
            .is_err()
        );

        let failed = junit(
            r#"<testcase classname="t" name="p"><failure message="boom&#10;more">x</failure></testcase>"#,
        );
        let err = measurements(
            &RecordFormat::Junit.parse(&failed).unwrap(),
            Statistic::Median,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "perf case t::p failed: boom");

        assert!(
            RecordFormat::Junit
                .parse("<testsuite><testcase name='a'>")
                .is_ok()
        );
        assert!(
            RecordFormat::Junit
                .parse("<testsuite><testcase name='a></testsuite>")
                .is_err()
        );
    }

    fn record(source: RecordSource, text: &str) -> Option<Record> {
        Some(Record {
            source,
            text: text.to_string(),
        })
    }

    #[test]
    fn each_source_yields_its_record_and_the_property_comes_first() {
        let xml = junit(concat!(
            r#"<testcase classname="t" name="property"><properties><property name="benchmark" value="{'cutile': {'forward': {'median': 0.25}}}"/></properties>"#,
            r#"<system-out>Cutile: {'forward': {'median': 9.0}} ms</system-out></testcase>"#,
            r#"<testcase classname="t" name="printed"><system-out>warm-up
  Cutile: {'backward': {'median': 0.5}} ms
done</system-out></testcase>"#,
            r#"<testcase classname="t" name="none"><system-out>Torch: {'forward': {}} ms</system-out></testcase>"#,
        ));
        let cases = RecordFormat::Junit.parse(&xml).unwrap();
        let records: Vec<_> = cases.iter().map(|c| c.record.clone()).collect();
        assert_eq!(
            records,
            [
                record(
                    RecordSource::Property,
                    "{'cutile': {'forward': {'median': 0.25}}}"
                ),
                record(RecordSource::PrintedLine, "{'backward': {'median': 0.5}}"),
                None,
            ]
        );
        let m = measurements(&cases[..2], Statistic::Median).unwrap();
        let values: Vec<_> = m.iter().map(|m| (m.pass.as_str(), m.value)).collect();
        assert_eq!(values, [("forward", 0.25), ("backward", 0.5)]);
    }

    #[test]
    fn a_second_printed_record_line_is_refused_never_taken() {
        // the code under test printing a line of its own before the harness's, or after it
        for stdout in [
            "Cutile: {'forward': {'median': 0.01}} ms\nCutile: {'forward': {'median': 7.0}} ms",
            "Cutile: {'forward': {'median': 7.0}} ms\nCutile: {'forward': {'median': 0.01}} ms",
        ] {
            let xml = junit(&format!(
                r#"<testcase classname="t" name="twice"><system-out>{stdout}</system-out></testcase>"#
            ));
            let cases = RecordFormat::Junit.parse(&xml).unwrap();
            assert_eq!(
                cases[0].record.as_ref().map(|r| r.source),
                Some(RecordSource::PrintedLines)
            );
            let err = measurements(&cases, Statistic::Median).unwrap_err();
            assert_eq!(
                crate::rules::hint::shown(&err),
                "t::twice printed 2 record lines (`Cutile: ... ms`) where its harness prints one: a line \
                 the code under test printed cannot be told from the harness's, so none is taken\nhint: \
                 remove the print of a `Cutile:` line from the kernel's code (or have the harness record \
                 the benchmark with record_property), then step again"
            );
        }
    }

    #[test]
    fn garbage_is_a_clear_error_and_never_a_record() {
        // not XML at all, and XML cut off inside a tag: the file gives no cases
        let err = RecordFormat::Junit
            .parse("<testsuite><testcase name='a></testsuite>")
            .unwrap_err();
        assert!(
            format!("{err:#}").starts_with(
                "the JUnit file is not valid XML (near byte 41): syntax error: attribute value not closed"
            ),
            "{err:#}"
        );
        let err = RecordFormat::Junit
            .parse("<testsuite></testcase>")
            .unwrap_err();
        assert!(
            format!("{err:#}").starts_with(
                "the JUnit file is not valid XML (near byte 22): ill-formed document: expected \
                 `</testsuite>`, but `</testcase>` was found"
            ),
            "{err:#}"
        );
        // a record that is not a Python literal, from either source, measures nothing
        let refused = |cases: &str| {
            let cases = RecordFormat::Junit.parse(&junit(cases)).unwrap();
            measurements(&cases, Statistic::Median)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            refused(
                r#"<testcase classname="t" name="p"><properties><property name="benchmark" value="{'cutile': {"/></properties></testcase>"#
            ),
            "benchmark record of t::p is not a Python literal: {'cutile': {"
        );
        let printed = r#"<testcase classname="t" name="p"><system-out>Cutile: forward=0.5 ms</system-out></testcase>"#;
        assert_eq!(
            RecordFormat::Junit.parse(&junit(printed)).unwrap()[0].record,
            record(RecordSource::PrintedLine, "forward=0.5")
        );
        assert_eq!(
            refused(printed),
            "printed record of t::p is not a Python literal: forward=0.5"
        );
        assert_eq!(
            refused(
                r#"<testcase classname="t" name="p"><properties><property name="benchmark" value="{'torch': {'forward': {'median': 1.0}}}"/></properties></testcase>"#
            ),
            "benchmark record of t::p has no 'cutile' entry: {'torch': {'forward': {'median': 1.0}}}"
        );
    }

    #[test]
    fn a_file_is_read_as_it_is_and_a_missing_one_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RecordFormat::Junit.file_name("benchmark"));
        assert_eq!(path.file_name().unwrap(), "benchmark.xml");
        assert!(RecordFile::read(&path, RecordFormat::Junit).is_none());
        let xml = read("test_rms_norm.xml");
        std::fs::write(&path, &xml).unwrap();
        let file = RecordFile::read(&path, RecordFormat::Junit)
            .unwrap()
            .unwrap();
        assert_eq!(
            file,
            RecordFile {
                format: RecordFormat::Junit,
                text: xml
            }
        );
        assert_eq!(file.cases().unwrap().len(), 10);
    }

    #[test]
    fn skipped_cases_are_left_out() {
        let xml = junit(
            r#"<testcase classname="t" name="p"><skipped message="no sm_100"/></testcase><testcase classname="t" name="q"/>"#,
        );
        let cases = RecordFormat::Junit.parse(&xml).unwrap();
        assert_eq!(cases[0].outcome, CaseOutcome::Skipped);
        assert_eq!(cases[1].id, "t::q");
        assert!(
            measurements(&cases[..1], Statistic::Median)
                .unwrap()
                .is_empty()
        );
    }
}
