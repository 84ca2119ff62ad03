//! `merge`: reports of several machines (or nextest fragments of
//! one) joined into one report, refusing what would make the joined matrix a lie
//! (different cases, different commits, one trial twice on one machine).

use std::collections::{BTreeSet, HashMap};

use serde_json::Map;

use crate::report::{DeviceNotRun, Machine, Report, Totals, SCHEMA};

/// One report to merge and the name it goes by (the path as given).
#[derive(Debug, Clone)]
pub struct Input {
    /// The path as the user gave it.
    pub name: String,
    /// Its contents.
    pub report: Report,
}

/// A merged report, and what the user should know about it.
#[derive(Debug)]
pub struct Merged {
    /// The merged report.
    pub report: Report,
    /// Things that did not stop the merge (a report with no commit, …).
    pub warnings: Vec<String>,
}

/// Why reports cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No reports.
    #[error("nothing to merge: give at least one report")]
    Empty,
    /// The reports ran different cases.
    #[error(
        "{first} and {second} are reports of different cases \
         (only in {first}: {only_first}; only in {second}: {only_second})\n  \
         = help: merge reports of the same case list, run without --filter or with the same one"
    )]
    DifferentCases {
        /// The first report.
        first: String,
        /// The report that differs.
        second: String,
        /// Cases only the first has.
        only_first: String,
        /// Cases only the second has.
        only_second: String,
    },
    /// The reports tested different code.
    #[error(
        "{first} and {second} are of different commits ({first_commit} and {second_commit})\n  \
         = help: run every machine on the same commit, then merge"
    )]
    DifferentCommits {
        /// The first report with a commit.
        first: String,
        /// Its commit.
        first_commit: String,
        /// The report that differs.
        second: String,
        /// Its commit.
        second_commit: String,
    },
    /// One machine ran one trial twice.
    #[error(
        "trial {trial} is in {first} and in {second}, both from machine {machine}\n  \
         = help: give each report once; nextest fragments of one run never repeat a trial"
    )]
    DuplicateTrial {
        /// The trial's name.
        trial: String,
        /// The machine both came from.
        machine: String,
        /// The first report holding it.
        first: String,
        /// The second.
        second: String,
    },
    /// A merged report whose trial names a machine it does not list.
    #[error(
        "{file}: trial {trial} names machine {machine}, which the report's machines do not list"
    )]
    UnknownMachine {
        /// The report.
        file: String,
        /// The trial.
        trial: String,
        /// The machine it names.
        machine: String,
    },
}

/// Joins reports into one.
pub fn merge(inputs: &[Input]) -> Result<Merged, MergeError> {
    let first = inputs.first().ok_or(MergeError::Empty)?;
    check_cases(first, &inputs[1..])?;
    let mut warnings = check_commits(inputs)?;

    let mut machines: Vec<Machine> = Vec::new();
    let mut trials = Vec::new();
    let mut origin: HashMap<(String, String), &str> = HashMap::new();
    let mut rest = Map::new();
    let mut rest_origin: HashMap<String, &str> = HashMap::new();
    for input in inputs {
        let mut ids: HashMap<String, String> = HashMap::new();
        for machine in input.report.machine_list() {
            let sources = if machine.sources.is_empty() {
                vec![input.name.clone()]
            } else {
                machine.sources.clone()
            };
            // The same environment (host included) is the same machine: nextest
            // fragments, or one machine's report merged twice over.
            let id = match machines
                .iter_mut()
                .find(|known| known.environment == machine.environment)
            {
                Some(known) => {
                    for source in sources {
                        if !known.sources.contains(&source) {
                            known.sources.push(source);
                        }
                    }
                    for (key, value) in machine.rest {
                        known.rest.entry(key).or_insert(value);
                    }
                    known.id.clone()
                }
                None => {
                    let id = unique_id(&machines, &machine.environment.host);
                    machines.push(Machine {
                        id: id.clone(),
                        sources,
                        environment: machine.environment,
                        rest: machine.rest,
                    });
                    id
                }
            };
            ids.insert(machine.id, id);
        }
        for trial in &input.report.trials {
            let named = input.report.machine_of(trial);
            let machine = ids
                .get(named)
                .ok_or_else(|| MergeError::UnknownMachine {
                    file: input.name.clone(),
                    trial: trial.name.clone(),
                    machine: named.to_owned(),
                })?
                .clone();
            let key = (machine.clone(), trial.name.clone());
            if let Some(first) = origin.insert(key, &input.name) {
                return Err(MergeError::DuplicateTrial {
                    trial: trial.name.clone(),
                    machine,
                    first: first.to_owned(),
                    second: input.name.clone(),
                });
            }
            let mut trial = trial.clone();
            trial.machine = Some(machine);
            trials.push(trial);
        }
        for (key, value) in &input.report.rest {
            match rest.get(key) {
                None => {
                    rest.insert(key.clone(), value.clone());
                    rest_origin.insert(key.clone(), &input.name);
                }
                Some(kept) if kept != value => warnings.push(format!(
                    "`{key}` differs between {} and {}; keeping the first",
                    rest_origin[key], input.name
                )),
                Some(_) => {}
            }
        }
    }

    let report = Report {
        schema: SCHEMA,
        complete: inputs.iter().all(|i| i.report.complete),
        interrupted: inputs
            .iter()
            .filter_map(|i| i.report.interrupted.clone())
            .reduce(|mut all, more| {
                all.in_flight.extend(more.in_flight);
                all
            }),
        cases: merged_cases(inputs),
        devices_not_run: merged_devices_not_run(inputs),
        environment: None,
        machines: Some(machines),
        totals: Totals::of(&trials),
        trials,
        rest,
    };
    Ok(Merged { report, warnings })
}

fn check_cases(first: &Input, others: &[Input]) -> Result<(), MergeError> {
    let first_cases = first.report.case_set();
    for other in others {
        let other_cases = other.report.case_set();
        if other_cases != first_cases {
            return Err(MergeError::DifferentCases {
                first: first.name.clone(),
                second: other.name.clone(),
                only_first: list(first_cases.difference(&other_cases)),
                only_second: list(other_cases.difference(&first_cases)),
            });
        }
    }
    Ok(())
}

fn list<'a>(cases: impl Iterator<Item = &'a String>) -> String {
    let cases: Vec<&str> = cases.map(String::as_str).collect();
    if cases.is_empty() {
        "none".to_owned()
    } else {
        cases.join(", ")
    }
}

/// Refuses two different commits; warns about reports that name none.
fn check_commits(inputs: &[Input]) -> Result<Vec<String>, MergeError> {
    let mut warnings = Vec::new();
    let mut reference: Option<(&str, String)> = None;
    for input in inputs {
        let mut missing = false;
        for machine in input.report.machine_list() {
            let Some(commit) = machine.environment.git_commit else {
                missing = true;
                continue;
            };
            match &reference {
                None => reference = Some((&input.name, commit)),
                Some((first, first_commit)) if !same_commit(first_commit, &commit) => {
                    return Err(MergeError::DifferentCommits {
                        first: (*first).to_owned(),
                        first_commit: first_commit.clone(),
                        second: input.name.clone(),
                        second_commit: commit,
                    });
                }
                Some(_) => {}
            }
        }
        if missing {
            warnings.push(format!(
                "{} records no git commit; merged without checking that it tested the same code",
                input.name
            ));
        }
    }
    Ok(warnings)
}

/// Commits match when one is an abbreviation of the other (`00ee538f` and
/// the full hash): bundles record what `git rev-parse --short` gave.
fn same_commit(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short.len() >= 7 && long.starts_with(short) || a == b
}

/// The host name, or the host name with the first free `-N` suffix.
fn unique_id(machines: &[Machine], host: &str) -> String {
    let taken = |id: &str| machines.iter().any(|m| m.id == id);
    if !taken(host) {
        return host.to_owned();
    }
    (2..)
        .map(|n| format!("{host}-{n}"))
        .find(|id| !taken(id))
        .expect("some suffix is free")
}

/// Every machine's devices not run, each device once (the first reason).
fn merged_devices_not_run(inputs: &[Input]) -> Option<Vec<DeviceNotRun>> {
    let mut merged: Vec<DeviceNotRun> = Vec::new();
    let mut any = false;
    for list in inputs
        .iter()
        .filter_map(|i| i.report.devices_not_run.as_ref())
    {
        any = true;
        for entry in list {
            if !merged.iter().any(|m| m.device == entry.device) {
                merged.push(entry.clone());
            }
        }
    }
    any.then_some(merged)
}

fn merged_cases(inputs: &[Input]) -> Option<Vec<String>> {
    let mut seen = BTreeSet::new();
    let mut cases = Vec::new();
    let mut any = false;
    for input in inputs {
        if let Some(list) = &input.report.cases {
            any = true;
            for case in list {
                if seen.insert(case.clone()) {
                    cases.push(case.clone());
                }
            }
        }
    }
    any.then_some(cases)
}

/// Why the reports of one run's test targets cannot be joined.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// No reports.
    #[error("nothing to join: no test target wrote a report")]
    Empty,
    /// Two targets define a case of the same name.
    #[error(
        "case `{case}` is in {first} and in {second}\n  \
         = help: give each case a name of its own: trial names and readback snapshots would collide"
    )]
    DuplicateCase {
        /// The case's name.
        case: String,
        /// The first target's report.
        first: String,
        /// The second's.
        second: String,
    },
    /// A target's report came from another machine or a merge.
    #[error(
        "{name} is not a single run's report (it has no environment, or another one than {first})"
    )]
    NotOneRun {
        /// The report that differs.
        name: String,
        /// The first report.
        first: String,
    },
}

/// Joins the reports that one run of several test targets (binaries with
/// different cases, on one machine) wrote into the one report of that run.
/// Unlike [`merge`], the cases differ and the machine is the same.
pub fn join(inputs: &[Input]) -> Result<Report, JoinError> {
    let first = inputs.first().ok_or(JoinError::Empty)?;
    let environment = first.report.environment.clone();
    let mut owner: HashMap<&str, &str> = HashMap::new();
    for input in inputs {
        if environment.is_none()
            || input.report.environment.as_ref().map(|e| &e.host)
                != environment.as_ref().map(|e| &e.host)
        {
            return Err(JoinError::NotOneRun {
                name: input.name.clone(),
                first: first.name.clone(),
            });
        }
        let cases: BTreeSet<&str> = match &input.report.cases {
            Some(cases) => cases.iter().map(String::as_str).collect(),
            None => input
                .report
                .trials
                .iter()
                .map(|t| t.case.as_str())
                .collect(),
        };
        for case in cases {
            if let Some(previous) = owner.insert(case, &input.name) {
                return Err(JoinError::DuplicateCase {
                    case: case.to_owned(),
                    first: previous.to_owned(),
                    second: input.name.clone(),
                });
            }
        }
    }
    let trials: Vec<_> = inputs
        .iter()
        .flat_map(|i| i.report.trials.iter().cloned())
        .collect();
    let mut rest = Map::new();
    for input in inputs {
        for (key, value) in &input.report.rest {
            rest.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
    let interrupted = inputs.iter().find_map(|i| i.report.interrupted.clone());
    Ok(Report {
        schema: SCHEMA,
        complete: inputs.iter().all(|i| i.report.complete),
        interrupted,
        cases: merged_cases(inputs),
        devices_not_run: merged_devices_not_run(inputs),
        environment,
        machines: None,
        totals: Totals::of(&trials),
        trials,
        rest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::{linux, one_machine};
    use crate::report::{Environment, Outcome, Trial};
    use serde_json::{json, Value};

    fn environment(host: &str, commit: Option<&str>, cuda: bool) -> Environment {
        linux(
            host,
            commit,
            Map::from_iter([("cuda".to_owned(), Value::Bool(cuda))]),
        )
    }

    fn trial(case: &str, check: &str, device: &str, outcome: Outcome) -> Trial {
        Trial {
            name: format!("{case}::{check}::{device}"),
            case: case.into(),
            check: check.into(),
            device: device.into(),
            outcome,
            message: String::new(),
            metrics: json!({}),
            caveat: None,
            machine: None,
            dtype: None,
            duration_ms: None,
            rest: Map::new(),
        }
    }

    fn input(name: &str, environment: Environment, trials: Vec<Trial>) -> Input {
        Input {
            name: name.into(),
            report: one_machine(environment, trials),
        }
    }

    #[test]
    fn same_host_and_environment_is_one_machine() {
        let env = environment("box", Some("abc1234"), false);
        let merged = merge(&[
            input(
                "p1.json",
                env.clone(),
                vec![trial("a", "timing", "cpu", Outcome::Passed)],
            ),
            input(
                "p2.json",
                env,
                vec![trial("a", "memory", "cpu", Outcome::Failed)],
            ),
        ])
        .unwrap();
        let machines = merged.report.machines.unwrap();
        assert_eq!(machines.len(), 1);
        assert_eq!(machines[0].id, "box");
        assert_eq!(machines[0].sources, ["p1.json", "p2.json"]);
        assert_eq!(
            merged.report.totals,
            Totals {
                passed: 1,
                failed: 1,
                ignored: 0
            }
        );
        assert!(merged.warnings.is_empty());
    }

    #[test]
    fn same_host_in_another_environment_gets_a_suffix() {
        let merged = merge(&[
            input(
                "a.json",
                environment("vm", None, false),
                vec![trial("a", "timing", "cpu", Outcome::Passed)],
            ),
            input(
                "b.json",
                environment("vm", None, true),
                vec![trial("a", "timing", "cpu", Outcome::Passed)],
            ),
        ])
        .unwrap();
        let ids: Vec<&str> = merged
            .report
            .trials
            .iter()
            .filter_map(|t| t.machine.as_deref())
            .collect();
        assert_eq!(ids, ["vm", "vm-2"]);
        assert_eq!(merged.warnings.len(), 2, "{:?}", merged.warnings);
        assert!(merged.warnings[0].starts_with("a.json records no git commit"));
    }

    #[test]
    fn a_merged_report_merges_again_to_the_same_machines() {
        let once = merge(&[
            input(
                "a.json",
                environment("vm", Some("abc1234"), false),
                vec![trial("a", "timing", "cpu", Outcome::Passed)],
            ),
            input(
                "b.json",
                environment("gpu", Some("abc1234"), true),
                vec![trial("a", "timing", "cuda:0", Outcome::Passed)],
            ),
        ])
        .unwrap()
        .report;
        let twice = merge(&[Input {
            name: "merged.json".into(),
            report: once.clone(),
        }])
        .unwrap()
        .report;
        assert_eq!(twice, once);
    }

    #[test]
    fn abbreviated_commits_match_their_full_hash() {
        assert!(same_commit("00ee538f", "00ee538f1234567890abcdef"));
        assert!(!same_commit(
            "00ee538f",
            "634593a6f39c79dc1167b721018784e00d1ebe1e"
        ));
        assert!(
            !same_commit("00e", "00ee538f"),
            "too short to mean anything"
        );
    }

    #[test]
    fn duplicate_trial_on_one_machine_is_refused() {
        let env = environment("box", None, false);
        let error = merge(&[
            input(
                "p1.json",
                env.clone(),
                vec![trial("a", "timing", "cpu", Outcome::Passed)],
            ),
            input(
                "p2.json",
                env,
                vec![trial("a", "timing", "cpu", Outcome::Passed)],
            ),
        ])
        .unwrap_err();
        assert_eq!(
            error.to_string().lines().next().unwrap(),
            "trial a::timing::cpu is in p1.json and in p2.json, both from machine box"
        );
    }

    #[test]
    fn planned_cases_win_over_the_cases_of_trials() {
        // A nextest fragment holds one trial, but plans every case.
        let env = environment("box", None, false);
        let mut p1 = input(
            "p1.json",
            env.clone(),
            vec![trial("a", "timing", "cpu", Outcome::Passed)],
        );
        let mut p2 = input(
            "p2.json",
            env,
            vec![trial("b", "timing", "cpu", Outcome::Passed)],
        );
        p1.report.cases = Some(vec!["a".into(), "b".into()]);
        p2.report.cases = Some(vec!["a".into(), "b".into()]);
        let merged = merge(&[p1.clone(), p2]).unwrap();
        assert_eq!(merged.report.cases, Some(vec!["a".into(), "b".into()]));
        p1.report.cases = None;
        let error = merge(&[p1, merged_input(merged.report)]).unwrap_err();
        assert_eq!(
            error.to_string().lines().next().unwrap(),
            "p1.json and merged.json are reports of different cases \
             (only in p1.json: none; only in merged.json: b)"
        );
    }

    fn merged_input(report: Report) -> Input {
        Input {
            name: "merged.json".into(),
            report,
        }
    }

    #[test]
    fn join_takes_every_target_s_cases_and_keeps_what_was_not_run() {
        let env = environment("box", Some("abc1234"), false);
        let mut devices = input(
            "devices.json",
            env.clone(),
            vec![trial("classifier", "placement", "cpu", Outcome::Failed)],
        );
        devices.report.cases = Some(vec!["classifier".into()]);
        devices.report.devices_not_run = Some(vec![DeviceNotRun {
            device: "cuda".into(),
            reason: "no GPU".into(),
        }]);
        let mut examples = input(
            "examples.json",
            env.clone(),
            vec![
                trial("char-rnn", "placement", "cpu", Outcome::Passed),
                trial("mnist-conv", "placement", "cpu", Outcome::Passed),
            ],
        );
        examples.report.cases = Some(vec!["char-rnn".into(), "mnist-conv".into()]);
        examples.report.complete = false;
        let joined = join(&[devices, examples]).unwrap();
        assert_eq!(
            joined.cases.as_deref().unwrap(),
            ["classifier", "char-rnn", "mnist-conv"]
        );
        assert_eq!(joined.trials.len(), 3);
        assert_eq!((joined.totals.passed, joined.totals.failed), (2, 1));
        assert!(!joined.complete);
        assert_eq!(joined.environment, Some(env));
        assert_eq!(joined.devices_not_run.unwrap()[0].device, "cuda");
    }

    #[test]
    fn join_refuses_a_case_in_two_targets_and_another_machine() {
        let env = environment("box", None, false);
        let a = input(
            "a.json",
            env.clone(),
            vec![trial("net", "placement", "cpu", Outcome::Passed)],
        );
        let b = input(
            "b.json",
            env,
            vec![trial("net", "memory", "cpu", Outcome::Passed)],
        );
        let error = join(&[a.clone(), b]).unwrap_err().to_string();
        assert!(
            error.starts_with("case `net` is in a.json and in b.json"),
            "{error}"
        );
        let other = input("c.json", environment("other", None, false), vec![]);
        let error = join(&[a, other]).unwrap_err().to_string();
        assert!(
            error.starts_with("c.json is not a single run's report"),
            "{error}"
        );
        assert!(matches!(join(&[]), Err(JoinError::Empty)));
    }
}
