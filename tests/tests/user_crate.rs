//! devcheck as a user meets it: a repository outside this workspace
//! (`tests/fixtures/user-crate`: its own Cargo.toml, a path dependency on
//! devcheck, tch's own Adam, `f64::try_from(&loss)` for logging, accuracy read
//! sample by sample, class weights made on the CPU every step), run the way
//! its author runs it, `cargo test --test devices`. What devcheck reports is at
//! that code's own lines.

use std::path::PathBuf;
use std::process::Command;

use devcheck_tests::{target_dir, user_crate, user_crate_line};

/// A command run in the fixture repository. It shares this workspace's target
/// directory (and so its build of tch); its own crates build apart, as a
/// user's would.
fn in_fixture(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = Command::new(program);
    command
        .current_dir(user_crate())
        .env("CARGO_TARGET_DIR", target_dir())
        .env_remove("DEVCHECK_REPORT");
    command
}

/// `cargo test --test NAME --` in the fixture, as its author runs it.
fn cargo_test(name: &str) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = in_fixture(cargo);
    command.args(["test", "--quiet", "--locked", "--test", name, "--"]);
    command
}

#[test]
fn ordinary_tch_code_is_seen_at_its_lines_on_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let output = cargo_test("devices")
        .args(["--device", "cpu", "--timing-ms", "100", "--report"])
        .arg(&report)
        .arg("--snapshots")
        .arg(dir.path().join("snapshots"))
        // As if the fixture were a repository of its own.
        .env("DEVCHECK_SOURCE_ROOT", user_crate())
        .output()
        .expect("run cargo test in the fixture");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(101), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let trial = |check: &str| {
        report["trials"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == format!("classifier::{check}::cpu"))
            .unwrap_or_else(|| panic!("no {check} trial: {report}"))
            .clone()
    };

    // Every read, wrapped or not, at its line: the logged loss and the two reads
    // per sample (8 samples), 17 per step, against the default budget of 0.
    let logged = user_crate_line("self.last_loss = f64::try_from(&loss)?;");
    let per_sample = user_crate_line("predicted.int64_value(&[i]) == labels.int64_value(&[i])");
    let readbacks = trial("readbacks");
    assert_eq!(readbacks["outcome"], "failed");
    assert_eq!(
        readbacks["metrics"]["readbacks_per_step"],
        serde_json::json!([17, 17, 17])
    );
    assert!(
        readbacks["message"].as_str().unwrap().starts_with(&format!(
            "17 host syncs per step, budget 0: first at src/lib.rs:{logged}:26 f64::try_from (scalar read) ×1 per step"
        )),
        "{}",
        readbacks["message"]
    );
    let sites: Vec<&str> = readbacks["metrics"]["sites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(sites.len(), 2, "{sites:?}");
    assert!(
        sites[1].starts_with(&format!("src/lib.rs:{per_sample}:"))
            && sites[1].ends_with("Tensor::int64_value (scalar read) ×16 per step"),
        "{sites:?}"
    );

    // The class weights, made from host data and moved every step: on an
    // accelerator, a host-to-device copy per step.
    let weights = user_crate_line("let weights = Tensor::from_slice(&CLASS_WEIGHTS)");
    let placement = trial("placement");
    assert_eq!(placement["outcome"], "failed");
    let message = placement["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("src/lib.rs:{weights}:")),
        "{message}"
    );
    assert!(
        message.contains("host-to-device copy every step"),
        "{message}"
    );

    // tch's own Adam runs its update in C++, where no Rust frame can see it;
    // the ops it runs are on the case's device and dtype.
    assert_eq!(
        placement["metrics"]["observed"].as_array().unwrap().len(),
        1
    );
    for check in ["tolerance", "timing", "fallback", "memory"] {
        assert_eq!(trial(check)["outcome"], "passed", "{}", trial(check));
    }
}

#[test]
fn tch_s_own_char_rnn_and_mnist_conv_steps_pass_every_check_on_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    // The examples' reviewed snapshots are the fixture's own (`snapshots/`).
    let output = cargo_test("examples")
        .args(["--device", "cpu", "--timing-ms", "100", "--report"])
        .arg(&report)
        .env("DEVCHECK_SOURCE_ROOT", user_crate())
        .env("CI", "true")
        .env_remove("DEVCHECK_SNAPSHOTS")
        .output()
        .expect("run cargo test in the fixture");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let trials = report["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 16, "two cases × eight checks");
    for trial in trials {
        assert_eq!(trial["outcome"], "passed", "{trial}");
    }
    let message = |name: &str| {
        trials
            .iter()
            .find(|t| t["name"] == name)
            .and_then(|t| t["message"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    // The example logs its loss every step: one sync, within the case's budget.
    assert_eq!(
        message("char-rnn::readbacks::cpu"),
        "1 host sync per step (budget 1)"
    );
    // The examples `view` their batch (char-rnn) and their convolutions'
    // output (mnist-conv), which needs contiguous memory: an input the step
    // refuses in another layout fails loudly, no silent wrong result, and is
    // kept as it was; the rest are compared.
    assert!(
        message("char-rnn::layout::cpu")
            .contains("`text` kept: the step refuses it otherwise, panicked at src/char_rnn.rs:"),
        "{}",
        message("char-rnn::layout::cpu")
    );
    assert!(
        message("mnist-conv::layout::cpu").starts_with(
            "18 tensors after 3 steps agree with the inputs in other layouts (`images` transposed \
             strides, `labels` a strided slice of a larger buffer; `4-D parameters` kept"
        ),
        "{}",
        message("mnist-conv::layout::cpu")
    );
    // tch's cross_entropy_for_logits computes the loss in float32 even in the
    // float64 reference run: said, not failed.
    assert!(
        message("mnist-conv::tolerance::cpu").contains("the reference computed loss (float32)"),
        "{}",
        message("mnist-conv::tolerance::cpu")
    );
}

#[test]
fn a_step_that_knows_its_batch_size_is_told_so_once_under_scaling() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    // char-rnn views its logits as [BATCH_SIZE * SEQ_LEN, labels].
    let output = cargo_test("examples")
        .args([
            "--device",
            "cpu",
            "--batch-multiplier",
            "2",
            "char-rnn::",
            "--report",
        ])
        .arg(&report)
        .output()
        .expect("run cargo test in the fixture");
    assert_eq!(output.status.code(), Some(101));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let messages: Vec<&str> = report["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages.len(), 8);
    assert!(
        messages[0].starts_with("the step does not accept batch 16 (its own 8 × 2): "),
        "{messages:?}"
    );
    for later in &messages[1..] {
        assert!(
            later.starts_with("not run: the step does not accept batch 16"),
            "{messages:?}"
        );
    }
}

/// `cargo devcheck …` in the fixture repository, as its author would type it.
fn cargo_devcheck(args: &[&str]) -> std::process::Output {
    in_fixture(devcheck_tests::binary("cargo-devcheck", "cargo-devcheck"))
        .arg("devcheck")
        .args(args)
        .env("DEVCHECK_SOURCE_ROOT", user_crate())
        .output()
        .expect("run cargo-devcheck")
}

#[test]
fn cargo_devcheck_runs_sweeps_dumps_compares_bundles_and_merges_the_user_s_cases() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let dumps = dir.path().join("dumps");
    let report_arg = report.to_str().unwrap();
    // Both test targets (devices: classifier; examples: char-rnn, mnist-conv)
    // found from the manifest, run, and joined into one report.
    let output = cargo_devcheck(&[
        "matrix",
        "--device",
        "cpu",
        "--report",
        report_arg,
        "--dump",
        dumps.to_str().unwrap(),
        "--filter",
        "::tolerance::cpu",
        "--summary",
        "markdown",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("== user-crate/devices =="), "{stderr}");
    assert!(stderr.contains("== user-crate/examples =="), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with("### devcheck"),
        "only the summary on stdout: {stdout}"
    );
    let joined: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let mut names: Vec<&str> = joined["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "char-rnn::tolerance::cpu",
            "classifier::tolerance::cpu",
            "mnist-conv::tolerance::cpu"
        ]
    );
    assert_eq!(joined["cases"].as_array().unwrap().len(), 3, "{joined}");

    // The dumps compare without libtorch.
    let dump = dumps.join("char-rnn/cpu.safetensors");
    let output = cargo_devcheck(&["compare", dump.to_str().unwrap(), dump.to_str().unwrap()]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // The sweep finds the target that holds the case.
    let out = dir.path().join("sweep");
    let output = cargo_devcheck(&[
        "sweep",
        "--case",
        "char-rnn",
        "--device",
        "cpu",
        "--out",
        out.to_str().unwrap(),
        "--epochs",
        "2",
        "--steps-per-epoch",
        "2",
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(out.join("char-rnn-cpu-epochs.json").is_file());

    // A bundle for a machine without cargo: its run.sh runs both targets there.
    let bundle = dir.path().join("bundle");
    let output = cargo_devcheck(&["bundle", "--out", bundle.to_str().unwrap()]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let libtorch = std::env::var_os("LIBTORCH").expect("run under `cargo xtask test`");
    let placement = dir.path().join("placement.json");
    // run.sh started inside another repository still reports the user's commit.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    for args in [
        &["init", "-q"][..],
        &[
            "-c",
            "user.name=x",
            "-c",
            "user.email=x@x",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
    ] {
        let done = Command::new("git")
            .args(args)
            .current_dir(&elsewhere)
            .status()
            .unwrap();
        assert!(done.success());
    }
    let bundled_commit = std::fs::read_to_string(bundle.join("COMMIT")).unwrap();
    let output = Command::new(bundle.join("run.sh"))
        .args(["--device", "cpu", "--report"])
        .arg(&placement)
        .arg("::placement::cpu")
        .env("DEVCHECK_LIBTORCH_LIB", PathBuf::from(libtorch).join("lib"))
        .env_remove("LD_LIBRARY_PATH")
        .env("DEVCHECK_SOURCE_ROOT", user_crate())
        .env_remove("DEVCHECK_GIT_COMMIT")
        .current_dir(&elsewhere)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    // The classifier's host-made weights fail placement, at their line.
    assert_eq!(output.status.code(), Some(101), "{stderr}");
    let placed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&placement).unwrap()).unwrap();
    let failed: Vec<&str> = placed["trials"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["outcome"] == "failed")
        .map(|t| t["message"].as_str().unwrap())
        .collect();
    let line = user_crate_line("Tensor::from_slice(&CLASS_WEIGHTS)");
    assert_eq!(failed.len(), 1, "{placed}");
    assert!(
        failed[0].starts_with(&format!("src/lib.rs:{line}:")),
        "{}",
        failed[0]
    );
    assert_eq!(placed["trials"].as_array().unwrap().len(), 3);
    let recorded = placed["environment"]["git_commit"]
        .as_str()
        .map(str::to_owned);
    assert_eq!(
        recorded,
        Some(bundled_commit.trim().to_owned()).filter(|c| !c.is_empty()),
        "the bundle's commit, not the working directory's"
    );

    // The two runs' reports merge into one matrix.
    let merged = dir.path().join("merged.json");
    let output = cargo_devcheck(&[
        "merge",
        report_arg,
        placement.to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    assert_eq!(merged["trials"].as_array().unwrap().len(), 6, "{merged}");
    let output = cargo_devcheck(&["sweep", "--case", "resnet"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("no case named `resnet`; cases: classifier, char-rnn, mnist-conv"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // A refused run (devcheck's own option, no `--`) leaves no earlier report
    // behind to pass for its own.
    let stale = dir.path().join("stale.json");
    std::fs::copy(&report, &stale).unwrap();
    let output = cargo_devcheck(&[
        "matrix",
        "--report",
        stale.to_str().unwrap(),
        "--require-device",
        "mps",
        "--filter",
        "::placement::",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("error: mps"), "{stderr}");
    assert!(!stale.exists(), "the earlier report is gone");
}

/// A step written for float32, as tch's min-gpt writes its attention: the
/// softmax is asked for in float32, so the float64 reference cannot run it and
/// tch's `matmul` panics there.
const FLOAT32_ONLY_STEP: &str = r#"//! A step that makes a float32 tensor itself.

use devcheck::{Batch, Case, Model, StepOutput};
use tch::nn::{self, Module, OptimizerConfig};
use tch::{Device, Kind, TchError, Tensor};

struct Attention {
    query: nn::Linear,
    optimizer: nn::Optimizer,
}

impl Model for Attention {
    fn step(&mut self, batch: &Batch) -> Result<StepOutput, TchError> {
        let x = batch.get("features");
        let scores = self.query.forward(x).matmul(&x.transpose(0, 1));
        let weights = scores.softmax(-1, Kind::Float);
        let attended = weights.matmul(x);
        let loss = attended.square().mean(Kind::Float);
        self.optimizer.backward_step(&loss);
        Ok(StepOutput {
            outputs: vec![("attended".into(), attended)],
            loss,
        })
    }
}

fn main() -> std::process::ExitCode {
    let case = Case::new(
        "attention",
        |vs| {
            Ok(Box::new(Attention {
                query: nn::linear(vs.root() / "query", 16, 16, Default::default()),
                optimizer: nn::Adam::default().build(vs, 1e-3)?,
            }) as Box<dyn Model>)
        },
        |_step| {
            Ok(Batch::new([(
                "features",
                Tensor::randn([8, 16], (Kind::Double, Device::Cpu)),
            )]))
        },
    );
    devcheck::run(vec![case])
}
"#;

#[test]
fn a_step_that_cannot_run_in_float64_fails_as_the_reference_at_its_line() {
    let repo = target_dir().join("user-crate-float32-only/user-crate");
    devcheck_tests::user_crate_copy(&repo, |manifest| {
        manifest + "\n[[test]]\nname = \"float32-only\"\nharness = false\n"
    });
    std::fs::write(repo.join("tests/float32-only.rs"), FLOAT32_ONLY_STEP).unwrap();
    let (line, column) = FLOAT32_ONLY_STEP
        .lines()
        .enumerate()
        .find_map(|(i, l)| Some((i + 1, l.find("weights.matmul(x)")? + 1 + "weights.".len())))
        .unwrap();
    let report = repo.join("report.json");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(&repo)
        .args([
            "test",
            "--quiet",
            "--locked",
            "--test",
            "float32-only",
            "--",
        ])
        .args(["--device", "cpu", "--report"])
        .arg(&report)
        .arg("attention::tolerance::")
        .env("CARGO_TARGET_DIR", target_dir())
        .env_remove("DEVCHECK_REPORT")
        .env_remove("DEVCHECK_SOURCE_ROOT")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(101), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let trial = &report["trials"][0];
    assert_eq!(trial["name"], "attention::tolerance::cpu");
    assert_eq!(trial["outcome"], "failed");
    let message = trial["message"].as_str().unwrap();
    // The reference is named as what failed, at the user's line, with the fix.
    assert!(
        message.starts_with(
            "the float64 reference run on the CPU failed (the step itself ran in float32 on cpu): "
        ),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "panicked at tests/float32-only.rs:{line}:{column} (Tensor::matmul): libtorch error: "
        )),
        "{message}"
    );
    assert!(
        message.ends_with("set `Case::reference_dtype(Kind::Float)`"),
        "{message}"
    );
}

/// A line of `source` holding `text`, and the column where `text` starts.
fn line_and_column(source: &str, text: &str) -> (usize, usize) {
    source
        .lines()
        .enumerate()
        .find_map(|(i, l)| Some((i + 1, l.find(text)? + 1)))
        .unwrap_or_else(|| panic!("no `{text}` in the source"))
}

#[test]
fn a_binary_crate_s_step_is_seen_at_its_own_lines_from_the_first_run_to_a_reviewed_snapshot() {
    // tests/fixtures/binary-crate: a `src/main.rs` written as tch's examples
    // are, and the README's test target that includes it.
    let repo = target_dir().join("user-crate-binary/user-crate");
    devcheck_tests::user_crate_copy(&repo, |manifest| {
        manifest + "\n[[test]]\nname = \"training\"\nharness = false\n"
    });
    let fixture = devcheck_tests::workspace_root().join("tests/fixtures/binary-crate");
    devcheck_tests::copy_dir(&fixture, &repo);
    let main_rs = std::fs::read_to_string(repo.join("src/main.rs")).unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let report = repo.join("report.json");
    let run_in = |filter: &str, ci: bool| {
        let mut command = Command::new(&cargo);
        command
            .current_dir(&repo)
            .args(["test", "--quiet", "--locked", "--test", "training", "--"])
            .args(["--device", "cpu", "--timing-ms", "100", "--report"])
            .arg(&report)
            .arg(filter)
            .env("CARGO_TARGET_DIR", target_dir())
            .env_remove("DEVCHECK_REPORT")
            .env_remove("DEVCHECK_SOURCE_ROOT");
        // Where CI is set, insta writes no pending file.
        if ci {
            command.env("CI", "true");
        } else {
            command.env_remove("CI");
        }
        command.output().unwrap()
    };
    let run = |filter: &str| run_in(filter, false);
    let trial = |report: &serde_json::Value, check: &str| {
        report["trials"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == format!("regression::{check}::cpu"))
            .unwrap_or_else(|| panic!("no {check} trial: {report}"))
            .clone()
    };

    // In CI a first run has nothing to review, and says where to review it.
    let output = run_in("regression::readbacks::", true);
    assert_eq!(output.status.code(), Some(101));
    let ci: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let message = trial(&ci, "readbacks")["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains(
            "no pending snapshot was written (insta writes none in CI unless INSTA_UPDATE=new): \
             run `cargo devcheck matrix` locally and review it with `cargo devcheck review`, then \
             commit snapshots/readbacks__regression.snap"
        ),
        "{message}"
    );
    assert!(!repo
        .join("snapshots/readbacks__regression.snap.new")
        .exists());

    // First run: every check, the one failure at the binary's own line.
    let output = run("regression::");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(101), "{stderr}");
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(!text.contains("tests/../"), "{text}");
    assert!(!stderr.contains("tests/../"), "{stderr}");
    let first: serde_json::Value = serde_json::from_str(&text).unwrap();
    let (logged, logged_column) = line_and_column(&main_rs, "f64::try_from(&loss)");
    let readbacks = trial(&first, "readbacks");
    assert_eq!(readbacks["outcome"], "failed");
    let message = readbacks["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "1 host sync per step, budget 0: first at src/main.rs:{logged}:{logged_column} f64::try_from \
             (scalar read) ×1 per step"
        )),
        "{message}"
    );
    assert!(message.contains("`cargo devcheck review`"), "{message}");
    let pending = repo.join("snapshots/readbacks__regression.snap.new");
    let recorded = std::fs::read_to_string(&pending).unwrap();
    assert!(
        recorded.ends_with(
            "host syncs per step: 1\nsrc/main.rs · app::train_step · f64::try_from (scalar read) ×1\n"
        ),
        "{recorded}"
    );
    // The loader's batch, handed over on the host, is moved at the step's line.
    // (`Tensor::to` where `to_device`, a one-line call of it, is compiled as a jump.)
    let (moved, column) = line_and_column(&main_rs, "xs.to_device(device)");
    let column = column + "xs.".len();
    let placement = trial(&first, "placement");
    assert_eq!(placement["outcome"], "passed", "{placement}");
    let uploads = placement["metrics"]["batch_uploads"].as_array().unwrap();
    assert_eq!(uploads.len(), 2, "{uploads:?}");
    assert!(
        uploads[0].as_str().unwrap().starts_with(&format!(
            "src/main.rs:{moved}:{column}: the batch's [16, 8] tensor is moved to the device with \
             `Tensor::to"
        )),
        "{uploads:?}"
    );
    for check in ["tolerance", "fallback", "memory"] {
        assert_eq!(trial(&first, check)["outcome"], "passed", "{first}");
    }

    // Reviewed without cargo-insta: the pending file becomes the snapshot.
    let output = Command::new(devcheck_tests::binary("cargo-devcheck", "cargo-devcheck"))
        .current_dir(&repo)
        .args(["devcheck", "review", "--accept"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!pending.exists());
    assert_eq!(
        std::fs::read_to_string(repo.join("snapshots/readbacks__regression.snap")).unwrap(),
        recorded
    );

    // A read added later is named first, at its line, before the reviewed one.
    let added = "    let _largest = f64::try_from(predicted.abs().max())?;\n";
    let edited = main_rs.replacen(
        "    Ok((predicted, loss))\n",
        &format!("{added}    Ok((predicted, loss))\n"),
        1,
    );
    std::fs::write(repo.join("src/main.rs"), &edited).unwrap();
    let (new_line, new_column) = line_and_column(&edited, "f64::try_from(predicted");
    let output = run("regression::readbacks::");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(101), "{stderr}");
    let second: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let message = trial(&second, "readbacks")["message"]
        .as_str()
        .unwrap()
        .to_owned();
    // Both reads are one snapshot line (a file, function and call: lines are
    // left out so that an edit above them changes nothing); its count rose.
    let new_site = format!(
        "src/main.rs:{logged}:{logged_column}, src/main.rs:{new_line}:{new_column} f64::try_from \
         (scalar read) ×2 per step (×1 in the reviewed snapshot)"
    );
    assert!(
        message.starts_with(&format!(
            "2 host syncs per step, budget 0: new at {new_site}"
        )),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "host syncs differ from the reviewed snapshot (new: {new_site}); review it with"
        )),
        "{message}"
    );
}
