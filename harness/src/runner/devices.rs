//! Which devices a run uses: every device found, or those asked for, each of
//! which must be able to run here; and MPS's CPU fallback, which libtorch
//! reads only when it loads.

use crate::device::{DeviceSlot, DeviceSpec};
use crate::shim;

use super::Refusal;

/// The devices to run on: every device found, or only those asked for with
/// `--device`. A device asked for (with `--device` or `--require-device`) that
/// cannot run here is refused, with the reason: CI must not go green having run
/// nothing. Devices not asked for stay, marked unavailable, as not run.
pub(super) fn select(
    found: Vec<DeviceSlot>,
    wanted: Option<&[DeviceSpec]>,
    required: &[DeviceSpec],
) -> Result<Vec<DeviceSlot>, Refusal> {
    let (slots, refused) = select_devices(found, wanted, required);
    if refused.is_empty() {
        Ok(slots)
    } else {
        Err(Refusal::Devices {
            problems: refused,
            restricted: wanted.is_some(),
        })
    }
}

fn select_devices(
    found: Vec<DeviceSlot>,
    wanted: Option<&[DeviceSpec]>,
    required: &[DeviceSpec],
) -> (Vec<DeviceSlot>, Vec<String>) {
    let mut refused = Vec::new();
    let mut check =
        |device: &DeviceSpec, how: &str| match found.iter().find(|s| s.device == *device) {
            Some(DeviceSlot {
                unavailable: None, ..
            }) => {}
            Some(DeviceSlot {
                unavailable: Some(reason),
                ..
            }) => refused.push(format!(
                "{device} was asked for with {how} but cannot run here: {reason}"
            )),
            None => refused.push(format!(
                "{device} was asked for with {how} but this machine has no such device"
            )),
        };
    for device in wanted.unwrap_or_default() {
        check(device, "--device");
    }
    for device in required {
        check(device, "--require-device");
    }
    let slots = match wanted {
        Some(wanted) => found
            .into_iter()
            .filter(|slot| wanted.contains(&slot.device))
            .collect(),
        None => found,
    };
    (slots, refused)
}

/// MPS reads `PYTORCH_ENABLE_MPS_FALLBACK` when libtorch loads, so on a machine
/// with MPS the process restarts itself with it set.
pub(super) fn ensure_mps_fallback_enabled() {
    if std::env::var("PYTORCH_ENABLE_MPS_FALLBACK").as_deref() == Ok("1") {
        return;
    }
    // Before any other libtorch call, as everywhere (see `crate::init`).
    let _ = crate::init();
    if !shim::backend_info(shim::Backend::Mps)
        .map(|m| m.available)
        .unwrap_or(false)
    {
        return;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        if let Ok(exe) = std::env::current_exe() {
            let error = std::process::Command::new(exe)
                .args(std::env::args_os().skip(1))
                .env("PYTORCH_ENABLE_MPS_FALLBACK", "1")
                .exec();
            eprintln!("warning: could not restart with PYTORCH_ENABLE_MPS_FALLBACK=1 ({error}); fallbacks will raise");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_asked_for_that_cannot_run_is_refused_and_others_stay_not_run() {
        let found = vec![
            DeviceSlot {
                device: DeviceSpec::Cpu,
                unavailable: None,
            },
            DeviceSlot {
                device: DeviceSpec::Cuda(0),
                unavailable: Some("cuda: built, but no usable GPU or driver".into()),
            },
        ];
        let (slots, refused) = select_devices(found.clone(), Some(&[DeviceSpec::Cpu]), &[]);
        assert_eq!(slots.len(), 1);
        assert!(refused.is_empty());
        let (_, refused) = select_devices(
            found.clone(),
            Some(&[DeviceSpec::Cpu, DeviceSpec::Cuda(0), DeviceSpec::Cuda(3)]),
            &[],
        );
        assert_eq!(
            refused,
            [
                "cuda:0 was asked for with --device but cannot run here: cuda: built, but no usable GPU or driver",
                "cuda:3 was asked for with --device but this machine has no such device",
            ]
        );
        // Not asked for: listed as not run, the run goes on.
        let (slots, refused) = select_devices(found.clone(), None, &[]);
        assert_eq!(slots.len(), 2);
        assert!(refused.is_empty());
        let (slots, refused) = select_devices(found, None, &[DeviceSpec::Cuda(0)]);
        assert_eq!(slots.len(), 2);
        assert_eq!(refused.len(), 1);
        assert!(refused[0].starts_with("cuda:0 was asked for with --require-device"));
    }
}
