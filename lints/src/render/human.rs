//! rustc/clippy-style diagnostics.

use annotate_snippets::{AnnotationKind, Group, Level, Origin, Renderer, Snippet};

use crate::{FileError, Finding, Report, Severity};

/// Renders the report the way rustc renders diagnostics, with a closing
/// summary line. `color` selects ANSI styling; callers decide it from the
/// terminal and `NO_COLOR`.
pub fn human(report: &Report, color: bool) -> String {
    let renderer = if color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    let mut out = String::new();
    for finding in &report.findings {
        out.push_str(&renderer.render(&[finding_group(report, finding)]));
        out.push_str("\n\n");
    }
    for error in &report.errors {
        out.push_str(&renderer.render(&[error_group(report, error)]));
        out.push_str("\n\n");
    }
    out.push_str(&summary(report));
    out.push('\n');
    out
}

fn level(severity: Severity) -> Level<'static> {
    match severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
        Severity::Note => Level::NOTE,
    }
}

fn finding_group<'a>(report: &'a Report, finding: &'a Finding) -> Group<'a> {
    let title = level(finding.severity)
        .primary_title(finding.message.as_str())
        .id(finding.rule.as_str());
    let path = finding.file.display().to_string();
    let source = report.sources.get(&finding.file);
    let mut group = match source.and_then(|text| excerpt(text, finding)) {
        Some((lines, span)) => title.element(
            Snippet::source(lines)
                .line_start(finding.line)
                .path(path)
                .annotation(AnnotationKind::Primary.span(span)),
        ),
        None => title.element(
            Origin::path(path)
                .line(finding.line)
                .char_column(finding.column),
        ),
    };
    for note in &finding.notes {
        group = group.element(Level::NOTE.message(note.as_str()));
    }
    if !finding.help.is_empty() {
        group = group.element(Level::HELP.message(finding.help));
    }
    group
}

fn error_group<'a>(report: &'a Report, error: &'a FileError) -> Group<'a> {
    let title = Level::ERROR.primary_title(error.message.as_str());
    let path = error.file.display().to_string();
    let excerpt = error
        .line
        .zip(report.sources.get(&error.file))
        .and_then(|(line, text)| {
            let start = line_start(text, line)?;
            let end = text[start..].find('\n').map_or(text.len(), |n| start + n);
            Some((line, &text[start..end]))
        });
    match excerpt {
        Some((line, text)) if !text.trim().is_empty() && text.len() < 500 => title.element(
            Snippet::source(text)
                .line_start(line)
                .path(path)
                .annotation(
                    AnnotationKind::Primary
                        .span(text.len() - text.trim_start().len()..text.trim_end().len()),
                ),
        ),
        Some((line, _)) => title.element(Origin::path(path).line(line)),
        None => title.element(Origin::path(path)),
    }
}

/// Byte offset where 1-based `line` starts.
fn line_start(text: &str, line: usize) -> Option<usize> {
    if line == 1 {
        return Some(0);
    }
    memchr::memchr_iter(b'\n', text.as_bytes())
        .nth(line - 2)
        .map(|n| n + 1)
}

/// The lines a finding spans, and its byte range within them.
fn excerpt<'a>(text: &'a str, finding: &Finding) -> Option<(&'a str, std::ops::Range<usize>)> {
    let start = line_start(text, finding.line)?;
    let last = line_start(text, finding.end_line)?;
    let end = text[last..].find('\n').map_or(text.len(), |n| last + n);
    let lines = &text[start..end];
    let byte_at = |line_offset: usize, column: usize| {
        let line = &lines[line_offset..];
        line.char_indices()
            .nth(column - 1)
            .map_or(line.find('\n').unwrap_or(line.len()), |(i, _)| i)
            + line_offset
    };
    let from = byte_at(0, finding.column.max(1));
    let to = byte_at(last - start, finding.end_column.max(1)).max(from);
    Some((lines, from..to))
}

fn summary(report: &Report) -> String {
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let mut text = format!(
        "devcheck-lint: {}, {}, {} in {} ({} parsed)",
        plural(report.count(Severity::Error), "error"),
        plural(report.count(Severity::Warning), "warning"),
        plural(report.count(Severity::Note), "note"),
        plural(report.files_scanned, "file"),
        report.files_parsed,
    );
    if !report.errors.is_empty() {
        text.push_str(&format!(
            "; {} could not be linted",
            plural(report.errors.len(), "input")
        ));
    }
    text
}
