//! Tagging the drawn SVG: plotters writes shapes without classes or titles, so the marks are found
//! afterwards by their status colours (used by nothing else) and given a class and a `<title>`, and
//! the picture its own title and description. Apart from the drawing because it reads and rewrites XML.

use anyhow::Result;
use plotters::prelude::*;
use quick_xml::events::{BytesEnd, BytesStart, BytesText, Event};

use anyhow::anyhow;

use crate::rules::decision::Status;

use super::{BAND, Tag, status_colour};

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
pub(super) fn tag_marks(svg: &str, tags: Vec<Tag>, title: &str, desc: &str) -> Result<String> {
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
