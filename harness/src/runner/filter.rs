//! A filter that matches no trial: refused under `--no-tests fail`, a warning
//! under `warn` (what `cargo test FILTER` needs, since cargo hands one filter
//! to every test binary), nothing under `pass`; either way the message names
//! the cases, checks and devices there are and the nearest case name.

use libtest_mimic::Arguments;

use crate::case::Case;
use crate::checks::Check;
use crate::device::DeviceSlot;

use super::settings::NoTests;
use super::trials::trial_name;
use super::Refusal;

/// Checks libtest's filter against the trials there will be.
pub(super) fn check(
    arguments: &Arguments,
    no_tests: NoTests,
    all: &[Case],
    selected: &[Case],
    slots: &[DeviceSlot],
) -> Result<(), Refusal> {
    let Some(filter) = &arguments.filter else {
        return Ok(());
    };
    let matched = selected.iter().any(|case| {
        Check::ALL.iter().any(|check| {
            slots.iter().any(|slot| {
                let name = trial_name(case, *check, slot.device);
                if arguments.exact {
                    name == *filter
                } else {
                    name.contains(filter.as_str())
                }
            })
        })
    });
    if matched || no_tests == NoTests::Pass {
        return Ok(());
    }
    let message = no_match_message(filter, all, selected, slots);
    if no_tests == NoTests::Fail {
        return Err(Refusal::NoMatch(message));
    }
    eprintln!("warning: {message}");
    Ok(())
}

/// Why a filter matched nothing, with what there is and the nearest case name.
fn no_match_message(filter: &str, all: &[Case], selected: &[Case], slots: &[DeviceSlot]) -> String {
    let names = |cases: &[Case]| {
        cases
            .iter()
            .map(|c| c.name().to_owned())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut message = format!("no trial matches the filter `{filter}`");
    let _ = std::fmt::Write::write_fmt(
        &mut message,
        format_args!(
            "\n  trials are named <case>::<check>::<device>\n  cases: {}\n  checks: {}\n  devices: {}",
            names(selected),
            Check::ALL.map(|c| c.name()).join(", "),
            slots
                .iter()
                .map(|s| s.device.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    let head = filter.split("::").find(|p| !p.is_empty()).unwrap_or(filter);
    let nearest = all
        .iter()
        .map(|c| (strsim::jaro_winkler(head, c.name()), c))
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((_, case)) = nearest {
        if case.fault().is_some() && !selected.iter().any(|c| c.name() == case.name()) {
            let _ = std::fmt::Write::write_fmt(
                &mut message,
                format_args!("\n  `{}` is a planted fault: add `--faults`", case.name()),
            );
        } else if case.name() != head {
            let _ = std::fmt::Write::write_fmt(
                &mut message,
                format_args!("\n  did you mean `{}`?", case.name()),
            );
        }
    }
    message
}
