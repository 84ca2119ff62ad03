//! Turns whatever ended a trial (a libtorch error, a panic, a shim error) into
//! one readable line: no C++ frame dump, no `Result::unwrap` noise.

use std::cell::RefCell;
use std::panic::{self, PanicHookInfo};
use std::sync::Once;

/// Longest cause kept, in characters.
const MAX_CAUSE: usize = 300;

/// The first meaningful line of a libtorch error message, without its backtrace.
pub fn torch_message(raw: &str) -> String {
    let text = raw.split("Exception raised from").next().unwrap_or(raw);
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if first.contains("out of memory") {
        return shorten(&out_of_memory(first));
    }
    shorten(first)
}

/// The figures of an out-of-memory message without its standard advice, which
/// would crowd them out of a one-line cause.
fn out_of_memory(message: &str) -> String {
    const ADVICE: [&str; 2] = ["If reserved but unallocated", "See documentation for"];
    let cut = ADVICE
        .iter()
        .filter_map(|a| message.find(a))
        .min()
        .unwrap_or(message.len());
    message[..cut]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Shortens to [`MAX_CAUSE`] characters on a character boundary.
pub fn shorten(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(MAX_CAUSE) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// A one-line cause from a tch error.
pub fn from_tch(error: &tch::TchError) -> String {
    match error {
        tch::TchError::Torch(message) => format!("libtorch error: {}", torch_message(message)),
        other => shorten(&other.to_string()),
    }
}

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
    static QUIET: RefCell<bool> = const { RefCell::new(false) };
}

/// Installs (once) a panic hook that, inside [`quietly`], records the panic as
/// one line instead of printing it; elsewhere it defers to the previous hook.
fn install_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if QUIET.with(|q| *q.borrow()) {
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(describe_panic(info)));
            } else {
                previous(info);
            }
        }));
    });
}

fn describe_panic(info: &PanicHookInfo<'_>) -> String {
    let payload = info
        .payload()
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| info.payload().downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    // tch's panicking methods unwrap a TchError whose text carries the C++ trace.
    let message = match payload.find("Torch(\"") {
        Some(start) => format!(
            "libtorch error: {}",
            torch_message(&unescape_debug(&payload[start + 7..]))
        ),
        None => shorten(payload),
    };
    match info.location() {
        Some(at) if !at.file().contains("/tch-") => {
            format!("panicked at {}:{}: {message}", at.file(), at.line())
        }
        // A tch method that panicked: the line worth naming is the user's call.
        _ => match user_call_site() {
            Some(site) => format!("panicked at {site}: {message}"),
            None => format!("panicked: {message}"),
        },
    }
}

/// The text of a `Debug`-printed string after its opening quote (`Torch("…")`
/// in an `unwrap` panic): escapes undone and the closing `")` dropped, which an
/// error without a C++ trace (a `std::out_of_range`, say) would otherwise keep.
fn unescape_debug(quoted: &str) -> String {
    let mut text = String::with_capacity(quoted.len());
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('n') => text.push('\n'),
                Some('t') => text.push('\t'),
                Some(other) => text.push(other),
                None => {}
            },
            '"' => break,
            _ => text.push(c),
        }
    }
    text
}

/// The user's line (and the tch call made there) on the panicking thread's
/// stack, as the op observer names the line of an op.
fn user_call_site() -> Option<String> {
    let trace = backtrace::Backtrace::new_unresolved();
    let addresses: Vec<usize> = trace.frames().iter().map(|f| f.ip() as usize).collect();
    crate::observer::sites::call_site(&addresses).located()
}

/// A panic that [`quietly`] caught: its one-line cause, named at the user's
/// line where one was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Panic(String);

impl Panic {
    /// The one-line cause.
    pub fn into_cause(self) -> String {
        self.0
    }
}

/// Runs `body`, turning a panic into `Err(one line)` without printing it.
pub fn quietly<T>(body: impl FnOnce() -> T) -> Result<T, Panic> {
    install_hook();
    // Nested calls (a reference run inside a trial) leave the outer one quiet.
    let outer = QUIET.with(|q| q.replace(true));
    let result = panic::catch_unwind(panic::AssertUnwindSafe(body));
    QUIET.with(|q| *q.borrow_mut() = outer);
    result.map_err(|_| {
        Panic(
            LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| "panicked".to_owned()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_the_cpp_backtrace_from_libtorch_errors() {
        let raw = "mat1 and mat2 shapes cannot be multiplied (64x4096 and 4000x10)\n\
                   Exception raised from meta at /pytorch/aten/src/ATen/native/LinearAlgebra.cpp:191 \
                   (most recent call first):\nframe #0: c10::Error::Error(...)";
        assert_eq!(
            torch_message(raw),
            "mat1 and mat2 shapes cannot be multiplied (64x4096 and 4000x10)"
        );
    }

    #[test]
    fn out_of_memory_keeps_its_figures_and_drops_the_advice() {
        let raw = "CUDA out of memory. Tried to allocate 4096.00 PiB. GPU 0 has a total capacity \
                   of 79.19 GiB of which 78.61 GiB is free. Of the allocated memory 17.03 MiB is \
                   allocated by PyTorch, and 2.00 MiB is reserved by PyTorch but unallocated. If \
                   reserved but unallocated memory is large try setting \
                   PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See \
                   documentation for Memory Management  \
                   (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n\
                   Exception raised from malloc at /pytorch/c10/cuda/CUDACachingAllocator.cpp:1";
        assert_eq!(
            torch_message(raw),
            "CUDA out of memory. Tried to allocate 4096.00 PiB. GPU 0 has a total capacity of \
             79.19 GiB of which 78.61 GiB is free. Of the allocated memory 17.03 MiB is allocated \
             by PyTorch, and 2.00 MiB is reserved by PyTorch but unallocated."
        );
    }

    #[test]
    fn a_panic_becomes_one_line_with_its_location() {
        let error = quietly(|| panic!("model diverged"))
            .unwrap_err()
            .into_cause();
        assert!(
            error.starts_with("panicked at harness/src/cause.rs:"),
            "{error}"
        );
        assert!(error.ends_with(": model diverged"), "{error}");
    }

    #[test]
    fn a_tch_panic_keeps_only_libtorch_s_message() {
        let error = quietly(|| {
            let a = tch::Tensor::zeros([2, 3], (tch::Kind::Float, tch::Device::Cpu));
            let _ = a.matmul(&a);
        })
        .unwrap_err()
        .into_cause();
        assert!(error.contains("libtorch error: "), "{error}");
        assert!(error.contains("cannot be multiplied"), "{error}");
        assert!(!error.contains("frame #"), "{error}");
        assert!(!error.contains('\n'), "{error}");
    }

    #[test]
    fn a_quiet_run_inside_another_leaves_the_outer_one_quiet() {
        let inner = quietly(|| {
            let nested = quietly(|| panic!("inner"));
            assert!(nested.unwrap_err().into_cause().ends_with(": inner"));
            panic!("outer")
        });
        assert!(inner.unwrap_err().into_cause().ends_with(": outer"));
        assert!(!QUIET.with(|q| *q.borrow()));
    }

    #[test]
    fn an_unwrapped_tch_error_without_a_trace_loses_its_quotes() {
        let payload = r#"vector::_M_range_check: __n (which is 1) >= this->size() (which is 1)")"#;
        assert_eq!(
            torch_message(&unescape_debug(payload)),
            "vector::_M_range_check: __n (which is 1) >= this->size() (which is 1)"
        );
        let escaped = r#"a \"b\"\nException raised from x")"#;
        assert_eq!(unescape_debug(escaped), "a \"b\"\nException raised from x");
    }

    #[test]
    fn long_causes_are_cut() {
        assert_eq!(shorten(&"x".repeat(1000)).chars().count(), MAX_CAUSE + 1);
    }
}
