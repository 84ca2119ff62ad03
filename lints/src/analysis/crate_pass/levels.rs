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
    /// It runs an update or a model itself (directly or through calls).
    pub runs_steps: bool,
    /// It runs a model and hands its output on to its next iteration (a
    /// generation loop): each iteration is one step, so a function it
    /// calls runs once per step even where that function holds a loop of
    /// its own (an ODE solver's or a sampler's steps within one frame).
    pub generation: bool,
    /// It runs a model and steps an environment with the answer (an agent
    /// acting): each iteration is one environment step, so an update it
    /// calls runs once per step, whatever loop of gradient steps that
    /// update holds.
    pub acts: bool,
    /// It walks the items of a collection through a model, one by one,
    /// and runs no update (scoring each candidate move, each leaf of a
    /// search's wave): a loop over one step's items, not over steps.
    pub walks_items: bool,
    /// It repeats (`loop`, `while`, a range) around calls that only walk
    /// items through a model (a game's turns, each scoring its candidate
    /// moves): each iteration is one step, so a function it calls runs
    /// once per step even where that function walks items of its own.
    pub walk_step: bool,
}

/// What one loop does, as far as steps go, directly or through calls.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LoopSteps {
    /// Runs an update (an optimizer or environment step).
    update: bool,
    /// Runs a model.
    forward: bool,
    /// Encloses a loop that runs steps: the line of that inner loop, or of
    /// the call that runs one.
    encloses: Option<usize>,
    /// It calls a function that repeats steps (`loop`, `while`, a range:
    /// whole episodes, games, generations), every implementation the call
    /// can reach, directly or in a loop nested in it.
    encloses_repeating: bool,
    /// A loop it encloses (or one in a function it calls) runs an update:
    /// not only models (a chunked encoder, a search's evaluations).
    encloses_update: bool,
    /// A loop it encloses is sequential (see [`is_sequential`]): a search's
    /// simulations, a generation's or a sampler's steps, directly or in a
    /// function it calls.
    encloses_sequence: bool,
}

/// What functions do, as far as steps go.
#[derive(Default)]
pub(super) struct StepSets {
    /// Run an update outside loops (directly or through calls).
    update: HashSet<FnId>,
    /// Run a model outside loops.
    forward: HashSet<FnId>,
    /// Hold a loop that runs steps (directly or through calls).
    looping: HashSet<FnId>,
    /// Hold a loop that repeats steps (`loop`, `while`, a range), or one
    /// around a step loop: generation, an episode, training.
    repeating: HashSet<FnId>,
    /// Hold a loop that runs an update (directly, through calls, or in a
    /// loop it encloses): training or an episode, not only models.
    looping_update: HashSet<FnId>,
    /// Hold a loop of steps that repeats (`loop`, `while`, a range) or
    /// hands a value on to its next pass (generation, a sampler's
    /// timesteps), or a loop around such a loop: not a walk over items.
    sequential: HashSet<FnId>,
}

impl StepSets {
    /// Adds what was found; whether anything was new.
    fn absorb(&mut self, found: StepSets) -> bool {
        let before = self.len();
        self.update.extend(found.update);
        self.forward.extend(found.forward);
        self.looping.extend(found.looping);
        self.repeating.extend(found.repeating);
        self.looping_update.extend(found.looping_update);
        self.sequential.extend(found.sequential);
        self.len() != before
    }

    fn len(&self) -> usize {
        self.update.len()
            + self.forward.len()
            + self.looping.len()
            + self.repeating.len()
            + self.looping_update.len()
            + self.sequential.len()
    }
}

/// What the loops of every file of the workspace do.
pub(crate) struct LoopLevels {
    levels: Vec<Vec<LoopLevel>>,
    /// Functions that run an update outside loops: each call is one
    /// optimizer (or environment) step, however rarely it is made.
    updates: HashSet<FnId>,
    /// Functions that hold a loop of steps and are no step themselves
    /// (training for an epoch, a whole episode): a call runs the loop once,
    /// and their reads outside it run once per call, not per step.
    pub(crate) epochs: HashSet<FnId>,
}

impl LoopLevels {
    /// The level of a loop of a file.
    pub(crate) fn get(&self, file: usize, loop_id: usize) -> LoopLevel {
        self.levels[file][loop_id]
    }

    /// The loop what sits in `loop_id` counts in: that loop, or, where it
    /// runs a few times fixed in the source (`for lr in [a, b, c]`, `for i
    /// in 0..4`) and runs no step nor is the once-per-epoch level, the
    /// first loop around it that is not such a loop (`None`: none is).
    pub(crate) fn counting_loop(
        &self,
        loops: &[crate::analysis::facts::LoopFacts],
        file: usize,
        loop_id: usize,
    ) -> Option<usize> {
        let mut current = loop_id;
        loop {
            let level = self.get(file, current);
            if !loops[current].fixed || level.runs_steps || level.per_epoch.is_some() {
                return Some(current);
            }
            current = loops[current].parent?;
        }
    }
}

impl CrateIndex<'_> {
    // ----- loops ---------------------------------------------------------

    /// How often each loop of the workspace runs its body, as far as steps
    /// go: which loops are the once-per-epoch level around a step loop, and
    /// which answer requests.
    pub(crate) fn loop_levels(&self) -> LoopLevels {
        // Per function: runs an update / a model outside loops, holds a
        // step loop, holds one that repeats steps (directly or through
        // calls). To a fixpoint over calls.
        let mut sets = StepSets::default();
        let resolved: Vec<Vec<Vec<FnId>>> = self
            .files
            .iter()
            .enumerate()
            .map(|(file, info)| {
                info.facts
                    .calls
                    .iter()
                    .map(|call| self.callees_by_arity(file, call))
                    .collect()
            })
            .collect();
        for (file, info) in self.files.iter().enumerate() {
            for (f, function) in info.facts.functions.iter().enumerate() {
                if function.update
                    || (function.update_named
                        && self.named_update_runs(file, None, f, &resolved[file]))
                {
                    sets.update.insert((file, f));
                }
                if function.forward
                    || (function.forward_named
                        && self.named_forward_runs(file, None, f, &resolved[file]))
                {
                    sets.forward.insert((file, f));
                }
            }
        }
        // Whether each loop runs a model, and an update, itself: its calls
        // by a forward pass's name, and its bare `step()` calls, settled.
        let settled = |marks: fn(&crate::analysis::facts::LoopFacts) -> (bool, bool),
                       named: fn(&str) -> bool|
         -> Vec<Vec<bool>> {
            self.files
                .iter()
                .enumerate()
                .map(|(file, info)| {
                    info.facts
                        .loops
                        .iter()
                        .enumerate()
                        .map(|(id, l)| {
                            let (own, by_name) = marks(l);
                            own || (by_name
                                && l.function.is_none_or(|f| {
                                    self.named_call_runs(file, Some(id), f, &resolved[file], named)
                                }))
                        })
                        .collect()
                })
                .collect()
        };
        let forwards = settled(|l| (l.forward, l.forward_named), is_forward);
        let updates = settled(|l| (l.update, l.update_named), is_bare_step);
        let mut levels: Vec<Vec<LoopSteps>>;
        loop {
            levels = self
                .files
                .iter()
                .enumerate()
                .map(|(file, info)| {
                    self.loop_steps(
                        info.facts,
                        &resolved[file],
                        (&forwards[file], &updates[file]),
                        &sets,
                    )
                })
                .collect();
            let mut found = StepSets::default();
            for (file, info) in self.files.iter().enumerate() {
                for (index, call) in info.facts.calls.iter().enumerate() {
                    let Some(function) = call.context.function else {
                        continue;
                    };
                    let id = (file, function);
                    let callees = &resolved[file][index];
                    // A loop of steps run only every so often (an update
                    // every N environment steps) leaves each call one step:
                    // it makes the caller neither loop nor repeat steps.
                    let periodic = call.context.periodic.is_some();
                    let steps: Vec<&FnId> = callees
                        .iter()
                        .filter(|c| self.is_step_fn(**c, &sets))
                        .collect();
                    let loops_in =
                        |c: &&FnId| sets.looping.contains(*c) && !self.is_step_fn(**c, &sets);
                    if call.context.loop_id.is_none() {
                        if steps.iter().any(|c| sets.update.contains(*c)) {
                            found.update.insert(id);
                        }
                        if steps.iter().any(|c| sets.forward.contains(*c)) {
                            found.forward.insert(id);
                        }
                        if !periodic
                            && callees
                                .iter()
                                .any(|c| sets.repeating.contains(c) && !self.is_step_fn(*c, &sets))
                        {
                            found.repeating.insert(id);
                        }
                    }
                    if !periodic {
                        let looped: Vec<&FnId> = callees.iter().filter(loops_in).collect();
                        if !looped.is_empty() {
                            found.looping.insert(id);
                        }
                        if looped.iter().any(|c| sets.looping_update.contains(*c)) {
                            found.looping_update.insert(id);
                        }
                        if looped.iter().any(|c| sets.sequential.contains(*c)) {
                            found.sequential.insert(id);
                        }
                    }
                }
                for (loop_id, facts) in info.facts.loops.iter().enumerate() {
                    let LoopSteps {
                        update: runs_update,
                        forward: runs_forward,
                        encloses,
                        encloses_update,
                        encloses_sequence,
                        ..
                    } = levels[file][loop_id];
                    let Some(f) = facts.function else {
                        continue;
                    };
                    // A loop over the model's own parts (layers, heads) is one
                    // forward pass: it holds no steps.
                    let runs_forward = runs_forward && !facts.over_components;
                    if runs_update || runs_forward || encloses.is_some() {
                        found.looping.insert((file, f));
                        if facts.repeats || encloses.is_some() {
                            found.repeating.insert((file, f));
                        }
                        if runs_update || encloses_update {
                            found.looping_update.insert((file, f));
                        }
                        if is_sequential(facts, encloses_sequence) {
                            found.sequential.insert((file, f));
                        }
                    }
                }
            }
            if !sets.absorb(found) {
                break;
            }
        }
        // A loop taking tensors from a channel and handing its results on
        // over another is a stage of a pipeline (the scatter thread copying
        // each forward's output for the workers, an inference worker fed
        // batches by loader threads and feeding a writer): it takes one per
        // step of the thread that sends them, not one request of a client.
        // One that only consumes them (a logging task) is a sink.
        let carries_tensors = self.channels_carry_tensors();
        let hands_on = if carries_tensors {
            self.loops_handing_on(&resolved)
        } else {
            Vec::new()
        };
        LoopLevels {
            epochs: sets
                .looping
                .iter()
                .filter(|id| !self.is_step_fn(**id, &sets))
                .copied()
                .collect(),
            updates: sets.update.clone(),
            levels: self
                .files
                .iter()
                .enumerate()
                .map(|(file, info)| {
                    let loops = &info.facts.loops;
                    let mut out: Vec<LoopLevel> = Vec::with_capacity(loops.len());
                    for (id, facts) in loops.iter().enumerate() {
                        let steps = levels[file][id];
                        // Parents come before their children.
                        let parent_stepless = facts.parent.is_none_or(|p| out[p].stepless);
                        // A loop that runs an update is a step loop, unless
                        // each of its passes first runs whole episodes or
                        // games (a repeating loop of steps): then its one
                        // update per pass is the epoch's, after the play.
                        let (runs_update, runs_forward) = (steps.update, steps.forward);
                        let generation =
                            facts.feeds_back && forwards[file][id] && !facts.over_components;
                        // A loop that runs a model itself, around loops
                        // that only walk items through models (an encoder
                        // over chunks), is one step per pass; not one around
                        // a search's simulations or a generation's steps.
                        let forward_step = steps.forward
                            && !facts.over_components
                            && !steps.encloses_update
                            && !steps.encloses_sequence;
                        // A loop that runs a model and steps an environment
                        // with its answer is a step loop, whatever loop of
                        // gradient steps the update it also calls runs.
                        let acts =
                            facts.steps_environment && steps.forward && !facts.over_environments;
                        // A loop walking the items of a collection its
                        // function was handed through a model, each on its
                        // own: the items of one step.
                        // Not a loop of a model's own `forward`: its
                        // loops are parts of one pass.
                        let in_forward = facts
                            .function
                            .is_some_and(|f| is_forward(&self.function((file, f)).name));
                        let walks_items = facts.over_inputs
                            && steps.forward
                            && !steps.update
                            && steps.encloses.is_none()
                            && !facts.repeats
                            && !facts.feeds_back
                            && !facts.over_components
                            && !facts.over_layers
                            && !in_forward;
                        // A loop that repeats around calls that only walk
                        // items through a model is one step per pass.
                        let walk_step = (facts.repeats || facts.feeds_back)
                            && steps.encloses.is_some()
                            && !steps.update
                            && !steps.encloses_update
                            && !steps.encloses_sequence
                            && !steps.encloses_repeating
                            && !facts.over_components;
                        let step_loop = (steps.update && !steps.encloses_repeating)
                            || generation
                            || forward_step
                            || acts
                            || walk_step;
                        let stage = facts.from_channel
                            && carries_tensors
                            && (facts.sends || hands_on[file][id]);
                        out.push(LoopLevel {
                            per_epoch: if step_loop { None } else { steps.encloses },
                            // A latency benchmark's iterations are requests
                            // too, unless each feeds the next (generation),
                            // and so are a demo's inputs written out.
                            request: (facts.request
                                || facts.listed
                                || (facts.timed && !generation))
                                && !runs_update
                                && !stage,
                            stepless: parent_stepless && !runs_update && !runs_forward && !stage,
                            runs_steps: runs_update || runs_forward,
                            generation,
                            acts,
                            walks_items,
                            walk_step,
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
        facts: &FileFacts,
        resolved: &[Vec<FnId>],
        (forwards, updates): (&[bool], &[bool]),
        sets: &StepSets,
    ) -> Vec<LoopSteps> {
        let mut steps: Vec<LoopSteps> = forwards
            .iter()
            .zip(updates)
            .map(|(&forward, &update)| LoopSteps {
                update,
                forward,
                ..LoopSteps::default()
            })
            .collect();
        for (index, call) in facts.calls.iter().enumerate() {
            let Some(loop_id) = call.context.loop_id else {
                continue;
            };
            let callees = &resolved[index];
            let step = |c: &&FnId| self.is_step_fn(**c, sets);
            if callees.iter().filter(step).any(|c| sets.update.contains(c)) {
                steps[loop_id].update = true;
            }
            if callees
                .iter()
                .filter(step)
                .any(|c| sets.forward.contains(c))
            {
                steps[loop_id].forward = true;
            }
            let looping = |c: &FnId| sets.looping.contains(c) && !self.is_step_fn(*c, sets);
            if call.context.periodic.is_none() && callees.iter().any(looping) {
                steps[loop_id].encloses.get_or_insert(call.loc.line);
                if callees
                    .iter()
                    .all(|c| looping(c) && sets.repeating.contains(c))
                {
                    steps[loop_id].encloses_repeating = true;
                }
                let looped: Vec<&FnId> = callees.iter().filter(|c| looping(c)).collect();
                steps[loop_id].encloses_update |=
                    looped.iter().any(|c| sets.looping_update.contains(*c));
                steps[loop_id].encloses_sequence |=
                    looped.iter().any(|c| sets.sequential.contains(*c));
            }
        }
        // Children come after their parents: fold the nested step loops up
        // (not a loop over the model's own parts: that is one forward pass;
        // not one behind a periodic guard, an evaluation or an update phase
        // every N steps).
        for id in (0..facts.loops.len()).rev() {
            let inner = steps[id];
            let child = &facts.loops[id];
            let runs_forward = inner.forward && !child.over_components;
            // A pass over parallel environments is one step of each: its
            // steps are the loop around it's own.
            if let (Some(parent), true) = (child.parent, child.over_environments) {
                steps[parent].update |= inner.update;
                steps[parent].forward |= runs_forward;
                continue;
            }
            if let (Some(parent), true) = (
                child.parent,
                child.statement
                    && !child.periodic
                    && (inner.update || runs_forward || inner.encloses.is_some()),
            ) {
                steps[parent].encloses.get_or_insert(child.line);
                if inner.encloses_repeating {
                    steps[parent].encloses_repeating = true;
                }
                if inner.update || inner.encloses_update {
                    steps[parent].encloses_update = true;
                }
                if is_sequential(child, inner.encloses_sequence) {
                    steps[parent].encloses_sequence = true;
                }
            }
        }
        steps
    }
}

impl CrateIndex<'_> {
    /// Per loop of each file: whether it, or a loop inside it, calls a
    /// function that hands results on to another thread (directly or
    /// through the functions it calls).
    fn loops_handing_on(&self, resolved: &[Vec<Vec<FnId>>]) -> Vec<Vec<bool>> {
        let mut handing: HashSet<FnId> = HashSet::new();
        for (file, info) in self.files.iter().enumerate() {
            for (f, function) in info.facts.functions.iter().enumerate() {
                if function.hands_on {
                    handing.insert((file, f));
                }
            }
        }
        loop {
            let mut grew = false;
            for (file, info) in self.files.iter().enumerate() {
                for (index, call) in info.facts.calls.iter().enumerate() {
                    let Some(f) = call.context.function else {
                        continue;
                    };
                    if !handing.contains(&(file, f))
                        && resolved[file][index].iter().any(|c| handing.contains(c))
                    {
                        handing.insert((file, f));
                        grew = true;
                    }
                }
            }
            if !grew {
                break;
            }
        }
        self.files
            .iter()
            .enumerate()
            .map(|(file, info)| {
                let loops = &info.facts.loops;
                let mut out = vec![false; loops.len()];
                for (index, call) in info.facts.calls.iter().enumerate() {
                    if resolved[file][index].iter().any(|c| handing.contains(c)) {
                        let mut current = call.context.loop_id;
                        while let Some(id) = current {
                            out[id] = true;
                            current = loops[id].parent;
                        }
                    }
                }
                out
            })
            .collect()
    }

    /// Whether some channel of the workspace carries tensors: a tensor, a
    /// collection of them, or a struct with a tensor field is sent.
    fn channels_carry_tensors(&self) -> bool {
        fn holds_tensor(kind: &TyKind) -> bool {
            match kind {
                TyKind::Tensor | TyKind::Tensors => true,
                TyKind::Tuple(parts) => parts.iter().any(holds_tensor),
                TyKind::Collection(inner) | TyKind::Map(inner) => holds_tensor(inner),
                _ => false,
            }
        }
        self.files
            .iter()
            .flat_map(|f| &f.facts.sent)
            .any(|sent| match sent {
                TyKind::Named(name) => self.structs.get(name.as_str()).is_some_and(|defs| {
                    defs.iter()
                        .any(|(_, def)| def.fields.iter().any(|(_, kind)| holds_tensor(kind)))
                }),
                kind => holds_tensor(kind),
            })
    }

    /// Whether calling this function is one step: a model's `forward` or
    /// a training step by its name, however many loops it runs inside
    /// (layers, heads), a function that runs an update outside loops, or
    /// one that runs a model outside loops and holds no loop repeating
    /// steps. One that runs the model once beside a loop that repeats steps
    /// (an encoder before per-token generation, a first value before an
    /// episode of environment steps) is not one step: the loop inside is
    /// the hot one, and a loop calling the function is the once-per-epoch
    /// level around it.
    fn is_step_fn(&self, id: FnId, sets: &StepSets) -> bool {
        let name = &self.function(id).name;
        // A function that runs a model outside its loops is one step,
        // unless it also repeats steps (a generation, a search, training);
        // loops that only walk items through models (an encoder over an
        // observation's chunks) leave it one step.
        is_forward(name)
            || is_update(name)
            || sets.update.contains(&id)
            || (sets.forward.contains(&id)
                && (!sets.repeating.contains(&id)
                    || !(sets.sequential.contains(&id) || sets.looping_update.contains(&id))))
    }
}

/// A call by the name of an optimizer's bare step, for [`CrateIndex::named_update_runs`].
fn is_bare_step(name: &str) -> bool {
    name == "step"
}

/// Whether a loop of steps is sequential rather than a walk over items: it
/// repeats (`loop`, `while`, a range), hands a value on to its next pass
/// (generation, a sampler's timesteps), or encloses such a loop.
fn is_sequential(facts: &crate::analysis::facts::LoopFacts, encloses_sequence: bool) -> bool {
    facts.repeats || facts.feeds_back || facts.carries || encloses_sequence
}

/// Where a function runs once per step: the call, in a per-step loop, that
/// runs it (directly, or through functions it calls outside their loops).
#[derive(Clone, Debug)]
pub(crate) struct HotCall {
    /// The file of the call in the loop.
    pub file: usize,
    /// The line of that loop.
    pub loop_line: usize,
    /// The function that loop calls.
    pub callee: FnId,
    /// The function holding the loop.
    pub caller: FnId,
    /// Where this function's arguments live, in the terms of that caller.
    pub args: Vec<Place>,
    /// That loop is a generation loop, or an agent acting: a function
    /// holding a loop of its own still runs once per its step, and so does
    /// what it calls.
    pub generation: bool,
    /// A framework runs the function once per frame (`loop_line` is where
    /// it is registered, or its own line): no loop of the crate's.
    pub frame: bool,
}

impl CrateIndex<'_> {
    /// Functions that run on every iteration of a per-step loop: called in
    /// one (outside periodic guards and code outside the release hot path,
    /// not the once-per-epoch or per-request level, and not handed each
    /// item of a loop that runs no step), or outside the
    /// loops of such a function. A call through a trait makes each impl it
    /// can reach run per step; one resolved only by name, among several
    /// candidates, makes none. A call whose whole copy is what a writer
    /// then writes out runs nothing per step: the copy is the point.
    pub(crate) fn hot_functions(
        &self,
        levels: &LoopLevels,
        summary: &Summary,
    ) -> HashMap<FnId, HotCall> {
        self.hot_functions_skipping(levels, summary, |_| false)
    }

    /// [`CrateIndex::hot_functions`], leaving out the loops of the
    /// functions `skip` names (those that never run).
    pub(crate) fn hot_functions_skipping(
        &self,
        levels: &LoopLevels,
        summary: &Summary,
        skip: impl Fn(FnId) -> bool,
    ) -> HashMap<FnId, HotCall> {
        let mut hot: HashMap<FnId, HotCall> = HashMap::new();
        // Calls outside loops, by the function making them; resolved only
        // once that function turns out to run per step.
        let mut top_level_calls: HashMap<FnId, Vec<&CallSite>> = HashMap::new();
        let mut pending: Vec<FnId> = Vec::new();
        let args_of = |call: &CallSite| -> Vec<Place> {
            call.args
                .iter()
                .map(|a| a.clone().unwrap_or_default())
                .collect()
        };
        for (file, info) in self.files.iter().enumerate() {
            for call in &info.facts.calls {
                let (Some(function), None) = (call.context.function, &call.context.cold) else {
                    continue;
                };
                if skip((file, function)) || self.written_copy(summary, file, call) {
                    continue;
                }
                // A call in a short loop fixed in the source that runs no
                // step counts in the loop around it, or outside loops.
                let Some(loop_id) = call
                    .context
                    .loop_id
                    .and_then(|l| levels.counting_loop(&info.facts.loops, file, l))
                else {
                    top_level_calls
                        .entry((file, function))
                        .or_default()
                        .push(call);
                    continue;
                };
                let level = levels.get(file, loop_id);
                // A function handed each whole item of a loop that runs no
                // step (converting each input for another runtime) runs
                // once per item, which is the loop's purpose.
                if level.per_epoch.is_some() || level.request {
                    continue;
                }
                // A function handed each whole item of a loop that runs no
                // step runs once per item: per step only where the function
                // holding that loop runs per step itself (each example's
                // loss in a batch's step).
                if level.stepless && call.item {
                    top_level_calls
                        .entry((file, function))
                        .or_default()
                        .push(call);
                    continue;
                }
                let one_step = level.generation || level.acts || level.walk_step;
                for callee in self.runs_per_call_in(file, call, levels, one_step) {
                    if hot.contains_key(&callee) {
                        continue;
                    }
                    hot.insert(
                        callee,
                        HotCall {
                            file,
                            loop_line: info.facts.loops[loop_id].line,
                            callee,
                            caller: (file, function),
                            args: args_of(call),
                            generation: one_step,
                            frame: false,
                        },
                    );
                    pending.push(callee);
                }
            }
        }
        // Functions a framework runs once per frame: each frame is a step.
        for (id, line) in self.frame_functions() {
            if skip(id) || hot.contains_key(&id) {
                continue;
            }
            hot.insert(
                id,
                HotCall {
                    file: line.0,
                    loop_line: line.1,
                    callee: id,
                    caller: id,
                    args: Vec::new(),
                    generation: true,
                    frame: true,
                },
            );
            pending.push(id);
        }
        while let Some(function) = pending.pop() {
            let origin = hot[&function].clone();
            for call in top_level_calls.get(&function).into_iter().flatten() {
                for callee in self.runs_per_call_in(function.0, call, levels, origin.generation) {
                    if hot.contains_key(&callee) {
                        continue;
                    }
                    let args = args_of(call)
                        .iter()
                        .map(|a| substitute(a, &origin.args))
                        .collect();
                    hot.insert(
                        callee,
                        HotCall {
                            args,
                            ..origin.clone()
                        },
                    );
                    pending.push(callee);
                }
            }
        }
        hot
    }
}

impl CrateIndex<'_> {
    /// The functions a framework runs once per frame, each with the place
    /// (file, line) that says so: per-frame methods of a framework's trait,
    /// and the free functions a file registers as per-frame callbacks.
    fn frame_functions(&self) -> Vec<(FnId, (usize, usize))> {
        let mut out = Vec::new();
        for (file, info) in self.files.iter().enumerate() {
            for (f, function) in info.facts.functions.iter().enumerate() {
                if let Some(line) = function.frame {
                    out.push(((file, f), (file, line)));
                }
            }
            for (name, line) in &info.facts.frame_callbacks {
                let free = self.closest(
                    Some(info.unit),
                    self.named(name)
                        .filter(|&id| self.function(id).owner.is_none()),
                );
                if let [id] = free.as_slice() {
                    out.push((*id, (file, *line)));
                }
            }
        }
        out
    }

    /// The functions a call runs: the one it resolves to, or, through a
    /// trait, each impl it can reach (whichever runs, runs on every call);
    /// none when candidates found by name leave it open.
    fn runs_per_call(&self, file: usize, call: &CallSite) -> Vec<FnId> {
        let callees = self.callees(file, call);
        if callees.len() == 1 || self.dispatches(file, call) {
            callees
        } else {
            Vec::new()
        }
    }

    /// Whether a call's read is a whole copy of what it returns, bound to
    /// a local a writer then takes: the copy is what is written out.
    pub(crate) fn written_copy(&self, summary: &Summary, file: usize, call: &CallSite) -> bool {
        call.written_by.is_some()
            && self
                .chain_through(&summary.syncs, file, call, &self.callees(file, call))
                .is_some_and(|chain| chain.written_by(call).is_some())
    }

    /// Whether the calls by a forward pass's name that a loop of a
    /// function (`loop_id`), or the function outside loops, makes run a
    /// model: one reaching no function of the crate is tch's (or another
    /// library's); one reaching a crate function runs a model unless every
    /// function it reaches sits in a file that never mentions tch (a tree
    /// search's `node.forward(..)` that descends the tree).
    fn named_forward_runs(
        &self,
        file: usize,
        loop_id: Option<usize>,
        function: usize,
        resolved: &[Vec<FnId>],
    ) -> bool {
        self.named_call_runs(file, loop_id, function, resolved, is_forward)
    }

    /// Whether a bare `step()` of a loop (or of a function, outside its
    /// loops) is an update: it reaches no crate function, or one in a file
    /// that mentions tch. One that reaches only crate functions in files
    /// that never mention tch advances a game or a search.
    fn named_update_runs(
        &self,
        file: usize,
        loop_id: Option<usize>,
        function: usize,
        resolved: &[Vec<FnId>],
    ) -> bool {
        self.named_call_runs(file, loop_id, function, resolved, is_bare_step)
    }

    /// Whether a call named as `named` says of a loop (or of a function
    /// outside its loops) reaches no crate function or one in a file that
    /// mentions tch.
    fn named_call_runs(
        &self,
        file: usize,
        loop_id: Option<usize>,
        function: usize,
        resolved: &[Vec<FnId>],
        named: impl Fn(&str) -> bool,
    ) -> bool {
        let mut named = self.files[file]
            .facts
            .calls
            .iter()
            .zip(resolved)
            .filter(|(call, _)| {
                call.context.loop_id == loop_id
                    && call.context.function == Some(function)
                    && named(call.callee.name())
            })
            .peekable();
        named.peek().is_none()
            || named.any(|(_, callees)| {
                callees.is_empty()
                    || callees
                        .iter()
                        .any(|&(f, _)| self.files[f].facts.mentions_tch)
            })
    }

    /// The functions a call runs once per iteration of the hot loop it
    /// sits in, each as one step (not one holding a loop of steps). Behind
    /// a periodic guard (`if t % update_interval == 0`) only those that are
    /// an update themselves count, since each of their calls is one
    /// optimizer step however often it is made; the guarded rest runs
    /// every N steps. `generation`: the loop is a generation loop, or an
    /// agent acting, whose every iteration is one step even where the
    /// callee loops.
    fn runs_per_call_in(
        &self,
        file: usize,
        call: &CallSite,
        levels: &LoopLevels,
        generation: bool,
    ) -> Vec<FnId> {
        let mut callees = self.runs_per_call(file, call);
        if call.context.periodic.is_some() {
            callees.retain(|c| levels.updates.contains(c));
        }
        // A function running a loop of steps of its own is not run per
        // step: its loop is judged where it is, its other code once per
        // call. In a generation loop a call is one step all the same.
        if !generation {
            callees.retain(|c| !levels.epochs.contains(c));
        }
        callees
    }

    /// Whether a read outside loops syncs when its function runs as the
    /// hot call says: for the arguments that call passes, where it is made.
    pub(crate) fn site_syncs_in(&self, file: usize, site: &Site, hot: &HotCall) -> bool {
        let from = Some(self.files[file].unit);
        if !self.satisfied(site.requirement.as_ref(), from) || !self.converts(site) {
            return false;
        }
        let condition = self.settle(&site.place, file);
        if condition == Place::Cpu {
            return false;
        }
        let at_call = substitute(&condition, &hot.args);
        !self.is_cpu(&at_call, hot.caller.0, Some(hot.caller.1))
    }
}
