//! What the trials of one case share: its initial weights and reference runs,
//! computed once by whichever trial needs them first, and the run's settings
//! the checks read. The runner makes it; the checks only read it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::case::{Case, Named};
use crate::checks::timing::TimingBudget;
use crate::checks::tolerance::{self, Trajectory};
use crate::device::DeviceSpec;
use crate::error::TrialError;
use crate::lock;

/// The default per-trial time limit.
pub const DEFAULT_TRIAL_TIMEOUT: Duration = Duration::from_secs(300);

/// One case's shared state and settings.
pub struct CaseState {
    case: Case,
    weights: Mutex<Option<Result<Named, Arc<TrialError>>>>,
    reference: Mutex<Option<Result<Trajectory, Arc<TrialError>>>>,
    cpu_same_dtype: Mutex<Option<Result<Trajectory, Arc<TrialError>>>>,
    /// Each device's own run in the case's dtype, once one ran.
    device_runs: Mutex<Vec<(DeviceSpec, Trajectory)>>,
    snapshots: Option<PathBuf>,
    timing: TimingBudget,
    time_limit: Duration,
    dump: Option<PathBuf>,
    /// The trial that hung, if one did: its thread still runs and may hold this state.
    hung: Mutex<Option<String>>,
    /// Why the step fails at the case's batch multiplier, once a trial found out.
    scaling: Mutex<Option<String>>,
}

/// The same tensors, shared (not copied).
pub(crate) fn shallow(named: &Named) -> Named {
    named
        .iter()
        .map(|(n, t)| (n.clone(), t.shallow_clone()))
        .collect()
}

fn cached<T>(
    slot: &Mutex<Option<Result<T, Arc<TrialError>>>>,
    make: impl FnOnce() -> Result<T, TrialError>,
    copy: impl Fn(&T) -> T,
) -> Result<T, TrialError> {
    let mut guard = lock(slot);
    if guard.is_none() {
        *guard = Some(make().map_err(Arc::new));
    }
    match guard.as_ref().expect("filled above") {
        Ok(value) => Ok(copy(value)),
        Err(cause) => Err(TrialError::Shared(Arc::clone(cause))),
    }
}

impl CaseState {
    /// Shared state for `case`.
    pub fn new(case: Case, snapshots: Option<PathBuf>, timing: TimingBudget) -> Self {
        let time_limit = case.trial_time_limit().unwrap_or(DEFAULT_TRIAL_TIMEOUT);
        Self {
            case,
            weights: Mutex::new(None),
            reference: Mutex::new(None),
            cpu_same_dtype: Mutex::new(None),
            device_runs: Mutex::new(Vec::new()),
            snapshots,
            timing,
            time_limit,
            dump: None,
            hung: Mutex::new(None),
            scaling: Mutex::new(None),
        }
    }

    /// The runner's time limit, where the case sets none.
    pub fn with_default_time_limit(mut self, limit: Option<Duration>) -> Self {
        if self.case.trial_time_limit().is_none() {
            self.time_limit = limit.unwrap_or(DEFAULT_TRIAL_TIMEOUT);
        }
        self
    }

    /// Saves each device's trajectory under `dir` (the runner's `--dump`).
    pub fn with_dump(mut self, dir: Option<PathBuf>) -> Self {
        self.dump = dir;
        self
    }

    /// The case.
    pub fn case(&self) -> &Case {
        &self.case
    }

    /// How long one of its trials may run.
    pub fn time_limit(&self) -> Duration {
        self.time_limit
    }

    /// The trial that hung, if one did.
    pub fn hung(&self) -> Option<String> {
        lock(&self.hung).clone()
    }

    /// Marks the case as hung in `trial`: its later trials are not run.
    pub fn mark_hung(&self, trial: String) {
        *lock(&self.hung) = Some(trial);
    }

    /// The sentence saying the step does not accept the scaled batch, once known.
    pub fn scaling_failure(&self) -> Option<String> {
        lock(&self.scaling).clone()
    }

    /// After a trial at a batch multiplier failed with `cause`: if the step runs
    /// at the case's own batch on `device`, the batch size is to blame, and the
    /// sentence saying so is kept for the case's other trials.
    pub fn diagnose_scaling(&self, device: DeviceSpec, cause: &str) -> Option<String> {
        let multiplier = self.case.batch_multiplier_in_use();
        if multiplier <= 1 {
            return None;
        }
        let own = self.case.clone().batch_multiplier(1);
        let runs_at_own_size = crate::cause::quietly(|| -> Result<(), TrialError> {
            let mut trainer =
                crate::trainer::Trainer::new(&own, device, own.kind(), &self.weights()?)?;
            trainer.run_step(0)?;
            Ok(())
        });
        if !matches!(runs_at_own_size, Ok(Ok(()))) {
            return None; // it fails at its own size too: not a matter of scale
        }
        let size = self
            .case
            .batch_size()
            .map_or_else(|| format!("×{multiplier}"), |n| n.to_string());
        let own_size = own
            .batch_size()
            .map_or(String::new(), |n| format!(" (its own {n} × {multiplier})"));
        let sentence = format!("the step does not accept batch {size}{own_size}: {cause}");
        *lock(&self.scaling) = Some(sentence.clone());
        Some(sentence)
    }

    /// Where the tolerance check saves trajectories, if it does.
    pub fn dump_dir(&self) -> Option<&PathBuf> {
        self.dump.as_ref()
    }

    /// The case's initial weights (made once).
    pub fn weights(&self) -> Result<Named, TrialError> {
        cached(
            &self.weights,
            || crate::trainer::initial_weights(&self.case),
            shallow,
        )
    }

    /// The CPU trajectory in the reference dtype, float64 unless the case says (made once).
    pub fn reference(&self) -> Result<Trajectory, TrialError> {
        let weights = self.weights()?;
        cached(
            &self.reference,
            || {
                // A step that cannot run in the reference dtype often panics
                // in a tch method: that is the reference failing, with its line.
                let run = crate::cause::quietly(|| {
                    tolerance::trajectory(
                        &self.case,
                        DeviceSpec::Cpu,
                        self.case.reference_kind(),
                        &weights,
                    )
                });
                match run {
                    Ok(Err(error @ TrialError::Torch(_))) => {
                        // A returned libtorch error has no line: find it again.
                        let at = crate::trainer::failing_line(
                            &self.case,
                            DeviceSpec::Cpu,
                            self.case.reference_kind(),
                            &weights,
                            self.case.tolerance_steps as u64,
                        );
                        Err(match at {
                            Some(site) => TrialError::At {
                                site,
                                error: Box::new(error),
                            },
                            None => error,
                        })
                    }
                    Ok(result) => result,
                    Err(panic) => Err(TrialError::Panicked(panic)),
                }
            },
            |t| t.iter().map(shallow).collect(),
        )
    }

    /// The CPU trajectory in the case's own dtype (made once).
    pub fn cpu_same_dtype(&self) -> Result<Trajectory, TrialError> {
        cached(
            &self.cpu_same_dtype,
            || self.device_run(DeviceSpec::Cpu),
            |t| t.iter().map(shallow).collect(),
        )
    }

    /// The case's k steps on `device` in its dtype, as the tolerance, layout
    /// and repeatability checks all start from: run once and shared. A run
    /// that fails is not kept, so each check reports the step's own error.
    pub fn device_run(&self, device: DeviceSpec) -> Result<Trajectory, TrialError> {
        if let Some((_, run)) = lock(&self.device_runs).iter().find(|(d, _)| *d == device) {
            return Ok(run.iter().map(shallow).collect());
        }
        let run = tolerance::trajectory(&self.case, device, self.case.kind(), &self.weights()?)?;
        let copy = run.iter().map(shallow).collect();
        lock(&self.device_runs).push((device, run));
        Ok(copy)
    }

    /// Where the reviewed readback snapshots live, if anywhere.
    pub fn snapshot_dir(&self) -> Option<&PathBuf> {
        self.snapshots.as_ref()
    }

    /// The timing budget.
    pub fn timing_budget(&self) -> TimingBudget {
        self.timing
    }
}
