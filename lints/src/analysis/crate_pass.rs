//! The crate-level pass: resolves deferred types against the crate's
//! structs and signatures, and computes which crate-local functions sync
//! (directly or through calls) and which contain loops.
//!
//! Resolution is by name, as precise as syntax allows: `Type::f` and
//! `value.f()` with a known receiver type resolve to that type's `f`; a call
//! on an unknown receiver resolves to every crate method named `f` unless the
//! name is one the standard library or tch also uses (`step`, `push`, ...),
//! and a call counts as syncing only if every candidate syncs.

use std::collections::{HashMap, HashSet};

use super::facts::{CallSite, Callee, FileFacts, FnFacts, StructFacts, TyKind};
use super::values::{tensor_method_returns_tensor, Requirement, TypeRef};
use crate::rules::RuleId;

/// A function: (file index within the crate, function index within the file).
pub(crate) type FnId = (usize, usize);

/// Method names too common to resolve without knowing the receiver's type:
/// the standard library's and tch's own.
const AMBIGUOUS_METHODS: &[&str] = &[
    "new",
    "default",
    "len",
    "is_empty",
    "push",
    "pop",
    "insert",
    "remove",
    "get",
    "get_mut",
    "clear",
    "extend",
    "iter",
    "iter_mut",
    "into_iter",
    "next",
    "clone",
    "map",
    "and_then",
    "unwrap",
    "expect",
    "contains",
    "append",
    "drain",
    "sort",
    "sum",
    "max",
    "min",
    "fold",
    "collect",
    "take",
    "skip",
    "write",
    "read",
    "flush",
    "send",
    "recv",
    "lock",
    "as_ref",
    "into",
    "from",
    "fmt",
    "eq",
    "cmp",
    "hash",
    "add",
    "sub",
    "mul",
    "div",
    "neg",
    "index",
    "deref",
    "drop",
    "split",
    "join",
    "entry",
    "to_string",
    "to_vec",
    "as_str",
    "as_slice",
    "keys",
    "values",
    "first",
    "last",
    "find",
    "filter",
    "any",
    "all",
    "count",
    "run",
    "call",
    "apply",
    "apply_t",
    "step",
    "zero_grad",
    "backward",
    "backward_step",
    "backward_step_clip",
    "set_lr",
    "build",
    "root",
    "forward",
    "forward_t",
    "save",
    "load",
    "freeze",
    "unfreeze",
    "variables",
    "trainable_variables",
    "device",
    "to_device",
    "print",
    "size",
    "reset",
    "init",
    "start",
    "stop",
    "close",
    "open",
    "parse",
    "with_capacity",
];

/// The resolved facts of one crate's files.
pub(crate) struct CrateIndex<'a> {
    files: &'a [&'a FileFacts],
    by_name: HashMap<&'a str, Vec<FnId>>,
    structs: HashMap<&'a str, Vec<&'a StructFacts>>,
    fields: HashMap<&'a str, Vec<&'a TyKind>>,
    local_types: HashSet<&'a str>,
}

/// How a crate-local function syncs: the chain down to the operation.
#[derive(Clone, Debug)]
pub(crate) struct Chain {
    /// The rule of the operation at the end of the chain.
    pub rule: RuleId,
    /// Function names, then the operation (`Critic::update`, `f32::try_from`).
    pub steps: Vec<String>,
    /// A periodic guard somewhere along the chain.
    pub periodic: Option<String>,
    /// The `devcheck.toml` pattern, for custom-pattern chains.
    pub pattern: Option<usize>,
    /// The operation's own message.
    pub message: String,
}

/// Which functions sync once per call.
#[derive(Default)]
pub(crate) struct Summary {
    /// Functions that sync once per call, with how.
    pub syncs: HashMap<FnId, Chain>,
}

impl<'a> CrateIndex<'a> {
    /// Indexes the given files of one crate.
    pub(crate) fn new(files: &'a [&'a FileFacts]) -> CrateIndex<'a> {
        let mut by_name: HashMap<&str, Vec<FnId>> = HashMap::new();
        let mut structs: HashMap<&str, Vec<&StructFacts>> = HashMap::new();
        let mut fields: HashMap<&str, Vec<&TyKind>> = HashMap::new();
        let mut local_types = HashSet::new();
        for (file_index, file) in files.iter().enumerate() {
            for (fn_index, function) in file.functions.iter().enumerate() {
                by_name
                    .entry(function.name.as_str())
                    .or_default()
                    .push((file_index, fn_index));
                if let Some(owner) = &function.owner {
                    local_types.insert(owner.as_str());
                }
            }
            for structure in &file.structs {
                structs
                    .entry(structure.name.as_str())
                    .or_default()
                    .push(structure);
                local_types.insert(structure.name.as_str());
                for (name, ty) in &structure.fields {
                    fields.entry(name.as_str()).or_default().push(ty);
                }
            }
        }
        CrateIndex {
            files,
            by_name,
            structs,
            fields,
            local_types,
        }
    }

    /// The function behind an id.
    pub(crate) fn function(&self, id: FnId) -> &'a FnFacts {
        &self.files[id.0].functions[id.1]
    }

    fn named(&self, name: &str) -> impl Iterator<Item = FnId> + '_ {
        self.by_name.get(name).into_iter().flatten().copied()
    }

    fn methods_of(&self, owner: &str, name: &str) -> Vec<FnId> {
        let own: Vec<FnId> = self
            .named(name)
            .filter(|&id| self.function(id).owner.as_deref() == Some(owner))
            .collect();
        if !own.is_empty() {
            return own;
        }
        // A trait's default method, called on a type that implements it.
        self.named(name)
            .filter(|&id| self.function(id).in_trait)
            .collect()
    }

    fn common_return(&self, ids: &[FnId]) -> Option<TyKind> {
        let first = &self.function(*ids.first()?).returns;
        ids.iter()
            .all(|&id| &self.function(id).returns == first)
            .then(|| first.clone())
    }

    fn common_field(&self, kinds: &[&TyKind]) -> Option<TyKind> {
        let first = *kinds.first()?;
        kinds.iter().all(|k| *k == first).then(|| first.clone())
    }

    /// What a deferred type turns out to be, if the crate says.
    pub(crate) fn resolve(&self, ty: &TypeRef) -> Option<TyKind> {
        self.resolve_within(ty, 0)
    }

    fn resolve_within(&self, ty: &TypeRef, depth: usize) -> Option<TyKind> {
        if depth > 16 {
            return None;
        }
        match ty {
            TypeRef::Named(name) if name == "Tensor" => Some(TyKind::Tensor),
            TypeRef::Named(name) => Some(TyKind::Named(name.clone())),
            TypeRef::Field { base, field } => match self.resolve_within(base, depth + 1) {
                Some(TyKind::Named(owner)) => {
                    let structs = self.structs.get(owner.as_str())?;
                    let kinds: Vec<&TyKind> = structs
                        .iter()
                        .flat_map(|s| s.fields.iter().filter(|(n, _)| n == field).map(|(_, k)| k))
                        .collect();
                    self.common_field(&kinds)
                }
                Some(_) => None,
                None => self
                    .fields
                    .get(field.as_str())
                    .and_then(|kinds| self.common_field(kinds)),
            },
            TypeRef::Part { base, index } => match (self.resolve_within(base, depth + 1), index) {
                (Some(TyKind::Tensors), None) => Some(TyKind::Tensor),
                (Some(TyKind::Tuple(parts)), Some(i)) => parts.get(*i).cloned(),
                _ => None,
            },
            TypeRef::Return { owner: None, name } => {
                let free: Vec<FnId> = self
                    .named(name)
                    .filter(|&id| self.function(id).owner.is_none())
                    .collect();
                self.common_return(&free)
            }
            TypeRef::Return {
                owner: Some(owner),
                name,
            } => match self.resolve_within(owner, depth + 1) {
                Some(TyKind::Named(owner)) => {
                    let methods = self.methods_of(&owner, name);
                    if methods.is_empty() {
                        is_constructor(name).then_some(TyKind::Named(owner))
                    } else {
                        self.common_return(&methods)
                    }
                }
                Some(TyKind::Tensor) => {
                    tensor_method_returns_tensor(name).then_some(TyKind::Tensor)
                }
                Some(_) => None,
                None if AMBIGUOUS_METHODS.contains(&name.as_str()) => None,
                None => {
                    let methods: Vec<FnId> = self
                        .named(name)
                        .filter(|&id| self.function(id).has_receiver)
                        .collect();
                    self.common_return(&methods)
                }
            },
            TypeRef::Unknown => None,
        }
    }

    /// Whether a site's condition on its subject's type holds.
    pub(crate) fn satisfied(&self, requirement: Option<&Requirement>) -> bool {
        let Some(requirement) = requirement else {
            return true;
        };
        match self.resolve(&requirement.ty) {
            Some(TyKind::Tensor) => true,
            Some(TyKind::Named(name)) => {
                !requirement.strict && !self.local_types.contains(name.as_str())
            }
            None => !requirement.strict,
            Some(_) => false,
        }
    }

    /// The crate-local functions a call may reach.
    pub(crate) fn callees(&self, callee: &Callee) -> Vec<FnId> {
        match callee {
            Callee::Free(name) => self
                .named(name)
                .filter(|&id| self.function(id).owner.is_none())
                .collect(),
            Callee::Assoc { owner, name } => match self.resolve(owner) {
                Some(TyKind::Named(owner)) => self.methods_of(&owner, name),
                _ => Vec::new(),
            },
            Callee::Method { receiver, name } => match self.resolve(receiver) {
                Some(TyKind::Named(owner)) => self
                    .methods_of(&owner, name)
                    .into_iter()
                    .filter(|&id| self.function(id).has_receiver)
                    .collect(),
                Some(TyKind::Tensor) => self
                    .named(name)
                    .filter(|&id| self.function(id).owner.as_deref() == Some("Tensor"))
                    .collect(),
                Some(_) => Vec::new(),
                None if AMBIGUOUS_METHODS.contains(&name.as_str()) => Vec::new(),
                None => self
                    .named(name)
                    .filter(|&id| self.function(id).has_receiver)
                    .collect(),
            },
        }
    }

    /// Computes which functions sync once per call, directly or through calls.
    pub(crate) fn summarize(&self) -> Summary {
        let mut summary = Summary::default();
        for (file_index, file) in self.files.iter().enumerate() {
            for site in &file.sites {
                let (Some(function), None) = (site.context.function, site.context.loop_id) else {
                    continue;
                };
                if !self.satisfied(site.requirement.as_ref()) {
                    continue;
                }
                let mut steps = site.via.clone();
                steps.push(site.hit.op.clone());
                let chain = Chain {
                    rule: site.hit.rule,
                    steps,
                    periodic: site.context.periodic.clone(),
                    pattern: site.pattern,
                    message: site.hit.message.clone(),
                };
                offer(&mut summary.syncs, (file_index, function), chain);
            }
        }
        let top_level_calls: Vec<(FnId, Vec<FnId>, &CallSite)> = self
            .files
            .iter()
            .enumerate()
            .flat_map(|(file_index, file)| file.calls.iter().map(move |call| (file_index, call)))
            .filter_map(|(file_index, call)| {
                let function = call.context.function?;
                let callees = self.callees(&call.callee);
                (!callees.is_empty()).then_some(((file_index, function), callees, call))
            })
            .collect();
        // Each function's chain can only improve once (guarded → unguarded),
        // so this terminates.
        loop {
            let mut changed = false;
            for (caller, callees, call) in &top_level_calls {
                if call.context.loop_id.is_some() {
                    continue;
                }
                let Some(chain) =
                    self.chain_through(&summary.syncs, callees, call.context.periodic.as_ref())
                else {
                    continue;
                };
                changed |= offer(&mut summary.syncs, *caller, chain);
            }
            if !changed {
                break;
            }
        }
        summary
    }

    /// The chain of a call whose every candidate callee syncs.
    pub(crate) fn chain_through(
        &self,
        syncs: &HashMap<FnId, Chain>,
        callees: &[FnId],
        periodic: Option<&String>,
    ) -> Option<Chain> {
        if callees.is_empty() || !callees.iter().all(|c| syncs.contains_key(c)) {
            return None;
        }
        // Prefer a candidate that syncs unconditionally.
        let callee = callees
            .iter()
            .find(|c| syncs[c].periodic.is_none())
            .unwrap_or(&callees[0]);
        let inner = &syncs[callee];
        let mut steps = vec![self.function(*callee).display_name()];
        steps.extend(inner.steps.iter().cloned());
        Some(Chain {
            rule: inner.rule,
            steps,
            periodic: periodic.cloned().or_else(|| inner.periodic.clone()),
            pattern: inner.pattern,
            message: inner.message.clone(),
        })
    }
}

/// Records a chain for a function unless it already has one at least as
/// strong; returns whether anything changed.
fn offer(syncs: &mut HashMap<FnId, Chain>, id: FnId, chain: Chain) -> bool {
    match syncs.get(&id) {
        Some(existing) if existing.periodic.is_none() || chain.periodic.is_some() => false,
        _ => {
            syncs.insert(id, chain);
            true
        }
    }
}

/// Associated functions that, when not defined in the crate, are assumed to
/// build their type (`nn::VarStore::new`, `Adam::default`).
fn is_constructor(name: &str) -> bool {
    matches!(
        name,
        "new" | "default" | "with_capacity" | "from" | "load" | "open" | "create"
    ) || name.starts_with("new_")
        || name.starts_with("with_")
        || name.starts_with("from_")
}
