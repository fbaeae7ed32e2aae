//! `read {path, offset?, limit?}`: text up to 2,000 lines or 50 KiB a call, with
//! one-indexed paging and a notice saying how to continue; PNG, JPEG, GIF and WebP
//! as images (read_image.rs); binary files refused. Text is read line by line,
//! never whole.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek};

use serde_json::{json, Value};

use super::read_image::{read_image, ImageKind};
use super::workspace::{Workspace, MAX_LOADED_FILE};
use super::{object_schema, positive, Stop};
use crate::tool::ToolResult;

pub(crate) const DESCRIPTION: &str = "Read a file. Text comes back up to 2000 lines or 50 KiB at a time; use offset (the first line, from 1) and limit (how many lines) to page. PNG, JPEG, GIF and WebP files come back as images.";
const MAX_LINES: usize = 2000;
const MAX_BYTES: usize = 50 * 1024;
const MAX_LINE_CHARS: usize = 2000;

pub(crate) fn schema() -> Value {
    object_schema(
        json!({"path": {"type": "string", "description": "The file, relative to the working directory or absolute."},
               "offset": {"type": "integer", "minimum": 1, "description": "The first line to read, from 1."},
               "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read (at most 2000)."}}),
        &["path"],
    )
}

pub(crate) fn run(workspace: &Workspace, arguments: &Value, stop: &Stop) -> Result<ToolResult, String> {
    let path = workspace.resolve(arguments["path"].as_str().unwrap_or_default())?;
    let shown = path.shown.as_str();
    let offset = positive(arguments, "offset")?.unwrap_or(1);
    let limit = positive(arguments, "limit")?.unwrap_or(MAX_LINES).min(MAX_LINES);
    // One open: what is checked is what is read, even if the path changes meanwhile.
    let (mut file, metadata) = workspace.open_file(&path)?;
    let failed = |e: std::io::Error| workspace.explain("read", &path, &e);
    let mut head = Vec::with_capacity(8192);
    (&mut file).take(8192).read_to_end(&mut head).map_err(failed)?;
    file.rewind().map_err(failed)?;
    if let Some(kind) = ImageKind::sniff(&head) {
        if metadata.len() > MAX_LOADED_FILE {
            return Err(format!("{shown} is an image of {} bytes, too large to read.", metadata.len()));
        }
        let mut bytes = Vec::with_capacity(metadata.len() as usize);
        file.take(MAX_LOADED_FILE).read_to_end(&mut bytes).map_err(failed)?;
        return read_image(bytes, shown, kind);
    }
    if head.contains(&0) {
        return Err(format!("{shown} is a binary file ({} bytes); read only shows text and images.", metadata.len()));
    }
    read_text(file, shown, offset, limit, stop).map_err(failed)?
}

/// The text result (or a model-facing error in it); the outer error is a read
/// failure, or the call's end (read stops reading when its call is over).
fn read_text(
    file: File,
    shown: &str,
    offset: usize,
    limit: usize,
    stop: &Stop,
) -> std::io::Result<Result<ToolResult, String>> {
    let mut reader = BufReader::new(file);
    let mut text = String::new();
    let mut line = Vec::new();
    let (mut number, mut shown_lines, mut cut_lines) = (0usize, 0usize, 0usize);
    let mut stopped_by_bytes = false;
    while let Some(long) = read_line(&mut reader, &mut line, stop)? {
        number += 1;
        if number < offset || shown_lines == limit || stopped_by_bytes {
            continue;
        }
        let mut piece = String::from_utf8_lossy(&line).into_owned();
        if long || piece.chars().count() > MAX_LINE_CHARS {
            piece = piece.chars().take(MAX_LINE_CHARS).collect();
            piece.push_str(" [line cut]");
            cut_lines += 1;
        }
        if !text.is_empty() && text.len() + piece.len() + 1 > MAX_BYTES {
            stopped_by_bytes = true;
            continue;
        }
        if shown_lines > 0 {
            text.push('\n');
        }
        text.push_str(&piece);
        shown_lines += 1;
    }
    if number == 0 {
        return Ok(Ok(ToolResult::text(format!("{shown} is empty."))));
    }
    if offset > number {
        return Ok(Err(format!("offset {offset} is past the end of {shown}, which has {number} lines.")));
    }
    let last = offset + shown_lines - 1;
    if cut_lines > 0 {
        text.push_str(&format!(
            "\n\n[{cut_lines} line(s) longer than {MAX_LINE_CHARS} characters were cut; use bash (for example cut or fold) to see them whole]"
        ));
    }
    if last < number {
        text.push_str(&format!(
            "\n\n[Showing lines {offset}-{last} of {number}. Use offset={} to continue.]",
            last + 1
        ));
    }
    Ok(Ok(ToolResult::text(text)))
}

/// Reads one line (without its line break) into `line`, keeping at most
/// `MAX_LINE_CHARS * 4` bytes of it. `None` at the end of the file; `Some(true)`
/// when the line was longer than what was kept.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>, stop: &Stop) -> std::io::Result<Option<bool>> {
    let keep = MAX_LINE_CHARS * 4;
    line.clear();
    let (mut any, mut long) = (false, false);
    loop {
        if stop.stopped() {
            return Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "the call was cancelled or timed out"));
        }
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(any.then_some(long));
        }
        any = true;
        let (piece, done) = match buffer.iter().position(|&b| b == b'\n') {
            Some(end) => (&buffer[..end], Some(end + 1)),
            None => (buffer, None),
        };
        let room = keep.saturating_sub(line.len());
        long |= piece.len() > room;
        line.extend_from_slice(&piece[..piece.len().min(room)]);
        let used = done.unwrap_or(buffer.len());
        reader.consume(used);
        if done.is_some() {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(long));
        }
    }
}
