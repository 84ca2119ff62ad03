//! Loop levels: which loops run the step (an update, a model's forward, a
//! generation step) and which are the once-per-epoch level around a step
//! loop, to a fixpoint over the workspace's calls.

use super::*;

/// How often code in a loop runs, as far as the loop structure says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LoopLevel {
    /// The loop runs no update itself but encloses a loop that runs steps
    /// (directly, or in a function it calls): the once-per-epoch level. The
    /// line of that inner step loop, or of the call.
    pub per_epoch: Option<usize>,
    /// The loop takes one incoming request per iteration.
    pub request: bool,
    /// Neither the loop nor a loop around it in its function runs a step
    /// (an update or a model): a loop over items, not over steps.
    pub stepless: bool,
}

/// What the loops of every file of the workspace do.
pub(crate) struct LoopLevels {
    levels: Vec<Vec<LoopLevel>>,
}

impl LoopLevels {
    /// The level of a loop of a file.
    pub(crate) fn get(&self, file: usize, loop_id: usize) -> LoopLevel {
        self.levels[file][loop_id]
    }
}

impl CrateIndex<'_> {
    // ----- loops ---------------------------------------------------------

    /// How often each loop of the workspace runs its body, as far as steps
    /// go: which loops are the once-per-epoch level around a step loop, and
    /// which answer requests.
    pub(crate) fn loop_levels(&self) -> LoopLevels {
        // Per function: runs an update / a model outside loops, and holds
        // a step loop (directly or through calls). To a fixpoint over calls.
        let mut update: HashSet<FnId> = HashSet::new();
        let mut forward: HashSet<FnId> = HashSet::new();
        let mut looping: HashSet<FnId> = HashSet::new();
        let resolved: Vec<Vec<Vec<FnId>>> = self
            .files
            .iter()
            .enumerate()
            .map(|(file, info)| {
                info.facts
                    .calls
                    .iter()
                    .map(|call| self.callees(file, call))
                    .collect()
            })
            .collect();
        for (file, info) in self.files.iter().enumerate() {
            for (f, function) in info.facts.functions.iter().enumerate() {
                if function.update {
                    update.insert((file, f));
                }
                if function.forward {
                    forward.insert((file, f));
                }
            }
        }
        let mut levels: Vec<Vec<(bool, bool, Option<usize>)>>;
        loop {
            levels = self
                .files
                .iter()
                .enumerate()
                .map(|(file, info)| {
                    self.loop_steps(
                        file,
                        info.facts,
                        &resolved[file],
                        &update,
                        &forward,
                        &looping,
                    )
                })
                .collect();
            let mut changed = false;
            for (file, info) in self.files.iter().enumerate() {
                for (index, call) in info.facts.calls.iter().enumerate() {
                    let Some(function) = call.context.function else {
                        continue;
                    };
                    let id = (file, function);
                    let callees = &resolved[file][index];
                    if call.context.loop_id.is_none() {
                        if callees.iter().any(|c| update.contains(c)) {
                            changed |= update.insert(id);
                        }
                        if callees.iter().any(|c| forward.contains(c)) {
                            changed |= forward.insert(id);
                        }
                    }
                    if callees
                        .iter()
                        .any(|c| looping.contains(c) && !self.is_step_fn(*c, &update, &forward))
                    {
                        changed |= looping.insert(id);
                    }
                }
                for (loop_id, facts) in info.facts.loops.iter().enumerate() {
                    let (runs_update, runs_forward, encloses) = levels[file][loop_id];
                    if let (Some(f), true) = (
                        facts.function,
                        runs_update || runs_forward || encloses.is_some(),
                    ) {
                        changed |= looping.insert((file, f));
                    }
                }
            }
            if !changed {
                break;
            }
        }
        LoopLevels {
            levels: self
                .files
                .iter()
                .enumerate()
                .map(|(file, info)| {
                    let loops = &info.facts.loops;
                    let mut out: Vec<LoopLevel> = Vec::with_capacity(loops.len());
                    for (id, facts) in loops.iter().enumerate() {
                        let (runs_update, runs_forward, encloses) = levels[file][id];
                        // Parents come before their children.
                        let parent_stepless = facts.parent.is_none_or(|p| out[p].stepless);
                        out.push(LoopLevel {
                            per_epoch: if runs_update { None } else { encloses },
                            request: facts.request && !runs_update,
                            stepless: parent_stepless && !runs_update && !runs_forward,
                        });
                    }
                    out
                })
                .collect(),
        }
    }

    /// Per loop of a file: (runs an update, runs a model, the line of a
    /// step loop it encloses).
    pub(super) fn loop_steps(
        &self,
        file: usize,
        facts: &FileFacts,
        resolved: &[Vec<FnId>],
        update: &HashSet<FnId>,
        forward: &HashSet<FnId>,
        looping: &HashSet<FnId>,
    ) -> Vec<(bool, bool, Option<usize>)> {
        let _ = file;
        let mut steps: Vec<(bool, bool, Option<usize>)> = facts
            .loops
            .iter()
            .map(|l| (l.update, l.forward, None))
            .collect();
        for (index, call) in facts.calls.iter().enumerate() {
            let Some(loop_id) = call.context.loop_id else {
                continue;
            };
            let callees = &resolved[index];
            if callees.iter().any(|c| update.contains(c)) {
                steps[loop_id].0 = true;
            }
            if callees.iter().any(|c| forward.contains(c)) {
                steps[loop_id].1 = true;
            }
            if steps[loop_id].2.is_none()
                && callees
                    .iter()
                    .any(|c| looping.contains(c) && !self.is_step_fn(*c, update, forward))
            {
                steps[loop_id].2 = Some(call.loc.line);
            }
        }
        // Children come after their parents: fold the nested step loops up.
        for id in (0..facts.loops.len()).rev() {
            let (runs_update, runs_forward, encloses) = steps[id];
            let child = &facts.loops[id];
            if let (Some(parent), true) = (
                child.parent,
                child.statement && (runs_update || runs_forward || encloses.is_some()),
            ) {
                if steps[parent].2.is_none() {
                    steps[parent].2 = Some(child.line);
                }
            }
        }
        steps
    }
}

impl CrateIndex<'_> {
    /// Whether calling this function is one step (a model's `forward`, a
    /// training step), however many loops it runs inside (layers, heads).
    fn is_step_fn(&self, id: FnId, update: &HashSet<FnId>, forward: &HashSet<FnId>) -> bool {
        let name = &self.function(id).name;
        update.contains(&id) || forward.contains(&id) || is_forward(name) || is_update(name)
    }
}
