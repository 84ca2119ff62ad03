//! Byte-level checks that run before parsing.
//!
//! Parsing is where a lint run spends its time, so files that cannot hold a
//! finding are never parsed: a file is parsed only if it names a tch-specific
//! operation or mentions tch at all (`Tensor`, `tch::`). Everything the rules
//! can report needs one of those, except calls to crate-local functions that
//! sync, which the engine finds in a second pass. The nesting check refuses
//! inputs deep enough to exhaust the parser's stack.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

/// Names of operations that only tch has, in the shape they are called;
/// any of them makes a file worth parsing.
const OPERATION_TOKENS: &[&str] = &[
    "double_value",
    "int64_value",
    "copy_data",
    "masked_select",
    ".nonzero(",
    "f_nonzero(",
    "nonzero_numpy",
    "argwhere",
    "unique_dim",
    "unique_consecutive",
    "._unique",
    "repeat_interleave",
    "bincount",
    "allclose",
    "batch_accuracy_for_logits",
    "clip_grad_norm",
    "backward_step_clip_norm",
    "Device::Cpu",
    ".iter::<",
];

/// Signs that a file uses tch, so that generic calls (`to_string`, `{}`,
/// `try_from`) on tensors can occur in it. `tch::` must start a path
/// (`patch::` does not count).
const TCH_TOKENS: &[&str] = &["Tensor", "tch::", "crate tch"];

static OPERATIONS: LazyLock<AhoCorasick> =
    LazyLock::new(|| AhoCorasick::new(OPERATION_TOKENS).expect("literal patterns compile"));
static TCH: LazyLock<AhoCorasick> =
    LazyLock::new(|| AhoCorasick::new(TCH_TOKENS).expect("literal patterns compile"));

/// Whether the file mentions tch (`Tensor`, `tch::`); unknown receivers of
/// tch-flavoured method names only count in such files.
pub fn mentions_tch(text: &str) -> bool {
    let bytes = text.as_bytes();
    TCH.find_iter(text).any(|m| {
        let starts_word = m.start() == 0
            || !(bytes[m.start() - 1].is_ascii_alphanumeric() || bytes[m.start() - 1] == b'_');
        TCH_TOKENS[m.pattern().as_usize()] != "tch::" || starts_word
    })
}

/// Whether the file can hold a finding of the built-in rules and so must be parsed.
pub fn is_candidate(text: &str) -> bool {
    OPERATIONS.is_match(text) || mentions_tch(text)
}

/// The deepest nesting of brackets, or run of prefix operators, that the
/// parser is asked to handle. syn parses these recursively; real code stays
/// below a hundred, so this only turns away generated or hostile input.
pub const MAX_NESTING: usize = 1000;

/// Where a file nests deeper than [`MAX_NESTING`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooDeep {
    /// 1-based line where the limit was crossed.
    pub line: usize,
}

/// Scans for bracket nesting, generic angle-bracket nesting or
/// prefix-operator runs deeper than [`MAX_NESTING`], skipping comments,
/// strings and character literals.
///
/// A `<` may be a comparison or a shift that never closes, so angle depth
/// counts only within one list element or statement: `,`, `;`, `{` and `}`
/// reset it. `->` and `=>` do not close a `<`.
pub fn check_nesting(text: &str) -> Result<(), TooDeep> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut prefix_run = 0usize;
    let mut angle_depth = 0usize;
    // Whether the last token seen can be followed by an operand, where a
    // `|` opens closure parameters rather than being an operator.
    let mut operand_expected = true;
    let mut line = 1usize;
    let mut i = 0usize;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'\n' => line += 1,
            b'(' | b'[' | b'{' => one_level_deeper(&mut depth, line)?,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = memchr::memchr(b'\n', &bytes[i..]).map_or(bytes.len(), |n| i + n);
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = skip_block_comment(bytes, i, &mut line);
                continue;
            }
            b'"' => {
                i = skip_string(bytes, i + 1, &mut line);
                operand_expected = false;
                continue;
            }
            b'r' if is_raw_string_start(bytes, i) => {
                i = skip_raw_string(bytes, i + 1, &mut line);
                operand_expected = false;
                continue;
            }
            b'\'' => {
                i = skip_char_literal(bytes, i);
                operand_expected = false;
                continue;
            }
            _ => {}
        }
        match b {
            b'<' => one_level_deeper(&mut angle_depth, line)?,
            b'>' if i > 0 && matches!(bytes[i - 1], b'-' | b'=') => {}
            b'>' => angle_depth = angle_depth.saturating_sub(1),
            b',' | b';' | b'{' | b'}' => angle_depth = 0,
            _ => {}
        }
        // Closures and `return`/`break` nest like prefix operators: syn
        // recurses once for each of `return || return || ...`.
        if is_word_start(bytes, i) {
            let end = i + bytes[i..]
                .iter()
                .position(|&c| !is_ident_byte(c))
                .unwrap_or(bytes.len() - i);
            if EXPRESSION_PREFIX_WORDS.contains(&&bytes[i..end]) {
                operand_expected = true;
                i = end;
                continue;
            }
        }
        if b == b'|' && operand_expected {
            // Closure parameters, however spelled, are one nesting level.
            let close = memchr::memchr(b'|', &bytes[i + 1..]).map_or(bytes.len(), |n| i + 1 + n);
            line += memchr::memchr_iter(b'\n', &bytes[i + 1..close]).count();
            one_level_deeper(&mut prefix_run, line)?;
            i = close + 1;
            continue;
        }
        if !b.is_ascii_whitespace() {
            operand_expected = matches!(
                b,
                b'=' | b'('
                    | b'['
                    | b'{'
                    | b','
                    | b';'
                    | b':'
                    | b'!'
                    | b'-'
                    | b'*'
                    | b'&'
                    | b'<'
                    | b'>'
                    | b'+'
                    | b'/'
                    | b'%'
                    | b'^'
                    | b'|'
            );
        }
        if matches!(b, b'-' | b'!' | b'*' | b'&') {
            one_level_deeper(&mut prefix_run, line)?;
        } else if !b.is_ascii_whitespace() {
            prefix_run = 0;
        }
        i += 1;
    }
    Ok(())
}

/// Counts one more level of nesting on `depth`; crossing [`MAX_NESTING`]
/// refuses the file at `line`.
fn one_level_deeper(depth: &mut usize, line: usize) -> Result<(), TooDeep> {
    *depth += 1;
    if *depth > MAX_NESTING {
        return Err(TooDeep { line });
    }
    Ok(())
}

/// Keywords that may start a nested expression without a bracket; they
/// neither count towards nor end a run of prefix operators.
const EXPRESSION_PREFIX_WORDS: &[&[u8]] = &[
    b"return", b"break", b"move", b"async", b"yield", b"static", b"mut",
];

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn is_word_start(bytes: &[u8], i: usize) -> bool {
    (bytes[i].is_ascii_alphabetic() || bytes[i] == b'_') && (i == 0 || !is_ident_byte(bytes[i - 1]))
}

fn skip_block_comment(bytes: &[u8], start: usize, line: &mut usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'/', Some(b'*')) => {
                depth += 1;
                i += 2;
            }
            (b'*', Some(b'/')) => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            (b'\n', _) => {
                *line += 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    i
}

/// Skips to just past the closing quote; `i` is just past the opening one.
fn skip_string(bytes: &[u8], mut i: usize, line: &mut usize) -> usize {
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            b'\n' => {
                *line += 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    i
}

fn is_raw_string_start(bytes: &[u8], i: usize) -> bool {
    let preceded_by_ident = i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
    if preceded_by_ident {
        return false;
    }
    let mut j = i + 1;
    while bytes.get(j) == Some(&b'#') {
        j += 1;
    }
    bytes.get(j) == Some(&b'"')
}

/// `i` is just past the `r` of `r#"..."#`.
fn skip_raw_string(bytes: &[u8], mut i: usize, line: &mut usize) -> usize {
    let mut hashes = 0;
    while bytes.get(i) == Some(&b'#') {
        hashes += 1;
        i += 1;
    }
    i += 1;
    while i < bytes.len() {
        if bytes[i] == b'\n' {
            *line += 1;
        }
        if bytes[i] == b'"'
            && bytes[i + 1..]
                .iter()
                .take(hashes)
                .filter(|&&b| b == b'#')
                .count()
                == hashes
        {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

/// Skips a character literal (`'a'`, `'\n'`, `'é'`); a lifetime is left alone.
fn skip_char_literal(bytes: &[u8], i: usize) -> usize {
    match bytes.get(i + 1) {
        Some(b'\\') => {
            let mut j = i + 3;
            while j < bytes.len() && j < i + 12 && bytes[j] != b'\'' {
                j += 1;
            }
            j + 1
        }
        Some(&c) => {
            let width = match c {
                0x00..=0x7f => 1,
                0xc0..=0xdf => 2,
                0xe0..=0xef => 3,
                _ => 4,
            };
            if bytes.get(i + 1 + width) == Some(&b'\'') {
                i + 2 + width
            } else {
                i + 1
            }
        }
        None => i + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `core` wrapped in `levels` of `open` … `close`.
    fn nested(open: &str, core: &str, close: &str, levels: usize) -> String {
        format!("{}{core}{}", open.repeat(levels), close.repeat(levels))
    }

    #[test]
    fn candidates_need_a_tch_token() {
        assert!(is_candidate("let v = loss.double_value(&[]);"));
        assert!(is_candidate("use tch::Tensor;"));
        assert!(is_candidate("fn f(t: &Tensor) {}"));
        assert!(!is_candidate(
            "fn main() { for i in 0..3 { println!(\"{}\", i.to_string()); } }"
        ));
        assert!(!is_candidate("let m = x.matches(pattern); // batch"));
        assert!(!is_candidate(
            "use crate::dispatch::Table; fn is_unique() {}"
        ));
        assert!(is_candidate("let n = mask.nonzero();"));
    }

    #[test]
    fn brackets_in_strings_comments_and_chars_do_not_count() {
        let opens = "(".repeat(MAX_NESTING + 5);
        let text = format!(
            "// {opens}\n/* {opens} /* nested */ */\nlet a = \"{opens}\\\"\";\nlet b = r#\"{opens}\"#;\nlet c = '(';\nfn f<'a>(x: &'a str) {{}}\n"
        );
        assert_eq!(check_nesting(&text), Ok(()));
    }

    #[test]
    fn deep_brackets_and_prefix_runs_are_refused_with_a_line() {
        let deep = format!(
            "fn f() {{\n let x = {};\n}}",
            nested("(", "1", ")", MAX_NESTING + 1)
        );
        assert_eq!(check_nesting(&deep), Err(TooDeep { line: 2 }));
        let ok = format!(
            "fn f() {{ let x = {}; }}",
            nested("(", "1", ")", MAX_NESTING - 2)
        );
        assert_eq!(check_nesting(&ok), Ok(()));
        let unary = format!(
            "fn f() {{\n\n let x = {}1; }}",
            "- ".repeat(MAX_NESTING + 1)
        );
        assert_eq!(check_nesting(&unary), Err(TooDeep { line: 3 }));
    }

    #[test]
    fn deep_generics_are_refused_but_comparisons_and_shifts_are_not() {
        let generics = format!(
            "fn f() {{\n let x: {} = 0;\n}}",
            nested("Vec<", "u8", ">", MAX_NESTING + 1)
        );
        assert_eq!(check_nesting(&generics), Err(TooDeep { line: 2 }));
        let returns = format!(
            "type F = {};",
            nested("Box<dyn Fn() -> ", "u8", ">", MAX_NESTING + 1)
        );
        assert_eq!(check_nesting(&returns), Err(TooDeep { line: 1 }));
        let table = format!(
            "const M: [u32; 2000] = [{}];\nfn g() {{ {} }}",
            "1 << 3, ".repeat(2000),
            "if a < b { c(); } ".repeat(2000)
        );
        assert_eq!(check_nesting(&table), Ok(()));
    }

    #[test]
    fn returned_closures_count_as_prefix_runs() {
        for level in [
            "return || ",
            "|x| -",
            "|x| return ",
            "move |(a, b): (u8, u8)| ",
        ] {
            let closures = format!("fn f() {{\n let g = {}1; }}", level.repeat(MAX_NESTING + 1));
            assert_eq!(
                check_nesting(&closures),
                Err(TooDeep { line: 2 }),
                "{level}"
            );
        }
        let ordinary = "fn f() { let ok = a || b || c; let g = move |x| x + 1; return g; }
"
        .repeat(MAX_NESTING);
        assert_eq!(check_nesting(&ordinary), Ok(()));
    }
}
