//! The crate-level pass, over every parsed file of a workspace: resolves
//! deferred types and calls against the crate-local structs, impls and
//! signatures, decides where deferred values live, computes which
//! crate-local functions sync (directly or through calls, and on which
//! arguments), and which loops run training or generation steps.
//!
//! Resolution follows scopes: a call resolves first within its own module,
//! then through the file's `use` declarations, then within its compilation
//! unit, its crate's library, and the workspace's other libraries. Names
//! are never merged across units that cannot see each other (two examples'
//! `train` functions stay apart). A method call on a receiver of known type
//! resolves to that type's impl, on a trait or generic receiver to every
//! impl of the trait, and on an unknown receiver to every visible method of
//! that name unless the standard library or tch also uses it; a call counts
//! as syncing only if every candidate syncs.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};

use super::facts::{
    CallSite, Callee, Cold, FieldStore, FileFacts, FnFacts, Site, StructFacts, TyKind,
};
use super::scope::Target;
use super::values::{tensor_method_result, Place, PlaceRef, Requirement, TypeRef};
use super::walker::{is_forward, is_update};
use crate::analysis::facts::Fix;
use crate::rules::RuleId;

mod levels;
mod placement;

pub(crate) use levels::{HotCall, LoopLevels};
pub(crate) use placement::substitute;
use placement::{holds_param, PlaceKey};

/// A function: (file index within the workspace, function index within the file).
pub(crate) type FnId = (usize, usize);

/// How deep placement and type questions are followed through fields,
/// calls and callers before the answer is "possibly on a device".
const MAX_DEPTH: usize = 12;

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
    "try_into",
    "try_from",
    "fmt",
    "eq",
    "cmp",
    "partial_cmp",
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
    "to_device_",
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
    "serialize",
    "deserialize",
    "visit",
];

/// One file as the crate pass sees it.
pub(crate) struct FileInfo<'a> {
    /// What the walk found.
    pub facts: &'a FileFacts,
    /// Its compilation unit (index into the index's units).
    pub unit: usize,
    /// Its module path within the unit.
    pub module: Vec<String>,
    /// Its crate is prepared for crates.io, so other crates call its
    /// functions.
    pub published: bool,
    /// It is compiled only into a program (a binary or example), so what
    /// the program's `main` cannot reach never runs.
    pub program: bool,
}

/// A compilation unit: a crate's library, binary, example, test or bench.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unit {
    /// Which crate of the workspace (index into the crate names).
    pub krate: usize,
    /// Which target of it.
    pub target: Target,
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
    /// Set when the operation is in code outside the release hot path.
    pub cold: Option<Cold>,
    /// The `devcheck.toml` pattern, for custom-pattern chains.
    pub pattern: Option<usize>,
    /// The operation's own message.
    pub message: String,
    /// Through a dispatch where only some of the implementations a call
    /// can reach sync: how many of them (the call nearest the caller).
    pub reach: Option<Reach>,
    /// Which advice fits the operation.
    pub fix: Fix,
    /// Where the operation's subject lives, in terms of the first
    /// function's parameters: on the CPU, the call does not sync.
    pub condition: Place,
    /// The function along the chain whose own loop holds the operation (or
    /// the call leading to it): a call then syncs once per iteration of
    /// that loop, not once.
    pub looped: Option<String>,
    /// That loop runs steps (an epoch's batches, a search's iterations),
    /// rather than going over one tensor's items: the reads are judged at
    /// that loop, and a call runs it once.
    pub looped_steps: bool,
    /// The function along the chain that runs a loop of steps of its own
    /// (an epoch of minibatches) with the operation, or the call leading to
    /// it, outside that loop: a call then syncs once per run of the whole
    /// loop, the once-per-epoch level, wherever it is made.
    pub epoch: Option<String>,
}

/// In how many of the implementations a call can reach (trait dispatch, a
/// method name shared by several types) the operation syncs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reach {
    /// Implementations that sync.
    pub syncing: usize,
    /// Implementations the call can reach.
    pub of: usize,
}

impl std::fmt::Display for Reach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            " (in {} of the {} implementations this call can reach)",
            self.syncing, self.of
        )
    }
}

impl Chain {
    /// How little the chain says about a call: guarded, cold, or syncing
    /// once per iteration of a loop of its own or once per epoch rather
    /// than once per call. Chains that say more are kept and shown first.
    fn weakness(&self) -> (bool, bool, bool) {
        (
            self.periodic.is_some(),
            self.cold.is_some(),
            self.looped.is_some() || self.epoch.is_some(),
        )
    }

    /// The writer that writes out what a call through this chain returns,
    /// where the chain's read is a whole copy and the call's result is
    /// bound to a local that writer takes: the copy is the point.
    pub(crate) fn written_by<'c>(&self, call: &'c CallSite) -> Option<&'c str> {
        call.written_by.as_deref().filter(|_| self.fix == Fix::Bulk)
    }
}

/// Which functions sync when called, and how.
#[derive(Default)]
pub(crate) struct Summary {
    /// Functions that sync when called, once or in a loop of their own
    /// ([`Chain::looped`]), with how (a few ways each, for different
    /// arguments).
    pub syncs: HashMap<FnId, Vec<Chain>>,
}

/// Every call site of each crate-local function: (file, call index).
type Callers = HashMap<FnId, Vec<(usize, usize)>>;

/// The resolved facts of one workspace's files.
pub(crate) struct CrateIndex<'a> {
    files: Vec<FileInfo<'a>>,
    units: Vec<Unit>,
    crate_names: Vec<Option<String>>,
    by_name: HashMap<&'a str, Vec<FnId>>,
    structs: HashMap<&'a str, Vec<(usize, &'a StructFacts)>>,
    fields: HashMap<&'a str, Vec<&'a TyKind>>,
    stores: HashMap<(&'a str, &'a str), Vec<(usize, &'a FieldStore)>>,
    traits_of: HashMap<&'a str, Vec<&'a str>>,
    traits: HashSet<&'a str>,
    /// Each trait's supertraits, by name.
    supertraits: HashMap<&'a str, Vec<&'a str>>,
    /// Aliases of types tch converts tensors into.
    aliases: HashSet<&'a str>,
    /// Other type aliases, to the named type they stand for, with the
    /// file of each.
    type_aliases: HashMap<&'a str, Vec<(usize, &'a str)>>,
    /// Method calls by the method's name: (file, call index).
    method_calls: HashMap<&'a str, Vec<(usize, usize)>>,
    local_types: HashSet<&'a str>,
    /// Device constants by name: whether every one of that name in the
    /// workspace is the CPU.
    device_consts: HashMap<&'a str, bool>,
    /// The names of the workspace's modules and crates, as a path's first
    /// segment may name them (`shape::area`, `my_crate::train`).
    modules: HashSet<String>,
    callers: RefCell<Option<Callers>>,
    places: RefCell<HashMap<PlaceKey, bool>>,
    visiting: RefCell<HashSet<PlaceKey>>,
    /// What is left of the current placement question's budget.
    budget: Cell<usize>,
    /// The workspace is a program that only ever runs on the CPU.
    cpu_only: bool,
}

impl<'a> CrateIndex<'a> {
    /// Indexes the given files of one workspace.
    pub(crate) fn new(
        files: Vec<FileInfo<'a>>,
        units: Vec<Unit>,
        crate_names: Vec<Option<String>>,
    ) -> CrateIndex<'a> {
        let mut by_name: HashMap<&str, Vec<FnId>> = HashMap::new();
        let mut structs: HashMap<&str, Vec<(usize, &StructFacts)>> = HashMap::new();
        let mut fields: HashMap<&str, Vec<&TyKind>> = HashMap::new();
        let mut stores: HashMap<(&str, &str), Vec<(usize, &FieldStore)>> = HashMap::new();
        let mut traits_of: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut traits = HashSet::new();
        let mut supertraits: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut aliases = HashSet::new();
        let mut type_aliases: HashMap<&str, Vec<(usize, &str)>> = HashMap::new();
        let mut method_calls: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
        let mut local_types = HashSet::new();
        let mut device_consts: HashMap<&str, bool> = HashMap::new();
        for (file_index, file) in files.iter().enumerate() {
            let facts = file.facts;
            for (name, cpu) in &facts.device_consts {
                *device_consts.entry(name.as_str()).or_insert(true) &= *cpu;
            }
            for (fn_index, function) in facts.functions.iter().enumerate() {
                // Calls of the default build resolve among the functions it
                // compiles (one backend's `impl Tensor`, not the other's).
                if !function.compiled_out {
                    by_name
                        .entry(function.name.as_str())
                        .or_default()
                        .push((file_index, fn_index));
                }
                if let Some(owner) = &function.owner {
                    local_types.insert(owner.as_str());
                    if function.in_trait {
                        traits.insert(owner.as_str());
                    }
                    if let Some(tr) = &function.trait_impl {
                        traits.insert(tr.as_str());
                        let list = traits_of.entry(owner.as_str()).or_default();
                        if !list.contains(&tr.as_str()) {
                            list.push(tr.as_str());
                        }
                    }
                }
            }
            for structure in &facts.structs {
                structs
                    .entry(structure.name.as_str())
                    .or_default()
                    .push((file_index, structure));
                local_types.insert(structure.name.as_str());
                for (name, ty) in &structure.fields {
                    fields.entry(name.as_str()).or_default().push(ty);
                }
            }
            for (index, call) in facts.calls.iter().enumerate() {
                if let Callee::Method { name, .. } = &call.callee {
                    method_calls
                        .entry(name.as_str())
                        .or_default()
                        .push((file_index, index));
                }
            }
            for alias in &facts.aliases {
                aliases.insert(alias.name.as_str());
            }
            for (alias, named) in &facts.type_aliases {
                if alias != named {
                    type_aliases
                        .entry(alias.as_str())
                        .or_default()
                        .push((file_index, named.as_str()));
                }
            }
            for declared in &facts.traits {
                traits.insert(declared.name.as_str());
                let list = supertraits.entry(declared.name.as_str()).or_default();
                for supertrait in &declared.supertraits {
                    if !list.contains(&supertrait.as_str()) {
                        list.push(supertrait.as_str());
                    }
                }
            }
            for store in facts.field_stores.iter().filter(|s| s.through.is_empty()) {
                stores
                    .entry((store.owner.as_str(), store.field.as_str()))
                    .or_default()
                    .push((file_index, store));
            }
        }
        // A store through fields (`self.config.device = d`) is one into the
        // struct they lead to, by the fields' declared types.
        for (file_index, file) in files.iter().enumerate() {
            for store in file
                .facts
                .field_stores
                .iter()
                .filter(|s| !s.through.is_empty())
            {
                let mut owner: &str = store.owner.as_str();
                for field in &store.through {
                    let next = structs.get(owner).and_then(|defs| {
                        let kinds: Vec<&str> = defs
                            .iter()
                            .flat_map(|(_, s)| s.fields.iter())
                            .filter(|(name, _)| name == field)
                            .filter_map(|(_, kind)| match kind {
                                TyKind::Named(name) => Some(name.as_str()),
                                _ => None,
                            })
                            .collect();
                        kinds
                            .first()
                            .copied()
                            .filter(|k| kinds.iter().all(|o| o == k))
                    });
                    match next {
                        Some(next) => owner = next,
                        None => {
                            owner = "";
                            break;
                        }
                    }
                }
                if !owner.is_empty() {
                    stores
                        .entry((owner, store.field.as_str()))
                        .or_default()
                        .push((file_index, store));
                }
            }
        }
        let modules: HashSet<String> = files
            .iter()
            .flat_map(|file| {
                file.module.iter().cloned().chain(
                    file.facts
                        .functions
                        .iter()
                        .flat_map(|f| f.module.iter().cloned()),
                )
            })
            .chain(crate_names.iter().flatten().map(|n| n.replace('-', "_")))
            .collect();
        CrateIndex {
            modules,
            files,
            units,
            crate_names,
            by_name,
            structs,
            fields,
            stores,
            traits_of,
            traits,
            supertraits,
            aliases,
            type_aliases,
            method_calls,
            local_types,
            device_consts,
            callers: RefCell::new(None),
            places: RefCell::new(HashMap::new()),
            visiting: RefCell::new(HashSet::new()),
            budget: Cell::new(0),
            cpu_only: false,
        }
    }

    /// The function behind an id.
    pub(crate) fn function(&self, id: FnId) -> &'a FnFacts {
        &self.files[id.0].facts.functions[id.1]
    }

    /// How many files it indexes.
    pub(crate) fn file_count(&self) -> usize {
        self.files.len()
    }

    /// The facts of a file.
    pub(crate) fn facts(&self, file: usize) -> &'a FileFacts {
        self.files[file].facts
    }

    // ----- scopes --------------------------------------------------------

    /// How close `file`'s unit is to the unit asking: 0 the same unit, 1
    /// its crate's library, 2 another library of the workspace; `None`
    /// when it cannot be seen from there.
    fn rank(&self, from_unit: usize, file: usize) -> Option<u8> {
        let unit = self.files[file].unit;
        if unit == from_unit {
            return Some(0);
        }
        let (from, to) = (&self.units[from_unit], &self.units[unit]);
        match (to.target == Target::Lib, from.krate == to.krate) {
            (true, true) => Some(1),
            (true, false) => Some(2),
            _ => None,
        }
    }

    /// The candidates visible from `from_unit` that are closest to it.
    fn closest(&self, from_unit: Option<usize>, ids: impl Iterator<Item = FnId>) -> Vec<FnId> {
        let Some(from) = from_unit else {
            return ids.collect();
        };
        let ranked: Vec<(u8, FnId)> = ids
            .filter_map(|id| self.rank(from, id.0).map(|r| (r, id)))
            .collect();
        let Some(best) = ranked.iter().map(|(r, _)| *r).min() else {
            return Vec::new();
        };
        ranked
            .into_iter()
            .filter(|(r, _)| *r == best)
            .map(|(_, id)| id)
            .collect()
    }

    fn named(&self, name: &str) -> impl Iterator<Item = FnId> + '_ {
        self.by_name.get(name).into_iter().flatten().copied()
    }

    /// The full module path of a function (file module, then inline `mod`s).
    fn module_of(&self, id: FnId) -> Vec<&str> {
        let file = &self.files[id.0];
        file.module
            .iter()
            .map(String::as_str)
            .chain(self.function(id).module.iter().map(String::as_str))
            .collect()
    }

    /// The unit of a crate's library, by the crate's name.
    fn library_of(&self, crate_name: &str) -> Option<usize> {
        let krate = self
            .crate_names
            .iter()
            .position(|n| n.as_deref() == Some(crate_name))?;
        self.units
            .iter()
            .position(|u| u.krate == krate && u.target == Target::Lib)
    }

    /// Free functions a call to `path` from `file` (inside `function`)
    /// reaches.
    fn free_callees(&self, file: usize, function: Option<usize>, path: &[String]) -> Vec<FnId> {
        let Some(name) = path.last() else {
            return Vec::new();
        };
        let unit = self.files[file].unit;
        let here: Vec<&str> = match function {
            Some(f) => self.module_of((file, f)),
            None => self.files[file].module.iter().map(String::as_str).collect(),
        };
        let free = |name: &str| -> Vec<FnId> {
            self.named(name)
                .filter(|&id| self.function(id).owner.is_none())
                .collect()
        };
        let in_module =
            |ids: &[FnId], unit: Option<usize>, tail: &[&str], exact: bool| -> Vec<FnId> {
                ids.iter()
                    .copied()
                    .filter(|&id| unit.is_none_or(|u| self.files[id.0].unit == u))
                    .filter(|&id| {
                        let module = self.module_of(id);
                        if exact {
                            module == tail
                        } else {
                            module.ends_with(tail)
                        }
                    })
                    .collect()
            };
        let candidates = free(name);
        if path.len() == 1 {
            let local = in_module(&candidates, Some(unit), &here, true);
            if !local.is_empty() {
                return local;
            }
            for import in &self.files[file].facts.uses {
                if import.alias == *name && import.path.len() >= 2 {
                    let found = self.path_callees(
                        file,
                        &here,
                        &import.path,
                        &free(import.path.last().map_or("", String::as_str)),
                    );
                    if !found.is_empty() {
                        return found;
                    }
                }
            }
            for import in &self.files[file].facts.uses {
                if import.alias == "*" {
                    let mut glob = import.path.clone();
                    glob.push(name.clone());
                    let found = self.path_callees(file, &here, &glob, &candidates);
                    if !found.is_empty() {
                        return found;
                    }
                }
            }
            return self.closest(Some(unit), candidates.into_iter());
        }
        let found = self.path_callees(file, &here, path, &candidates);
        if !found.is_empty() {
            return found;
        }
        if let Some(reexported) = self.reexported(file, path, &free) {
            return reexported;
        }
        // `geometric_features::area(..)`: a path that starts from another
        // crate (no module, crate or import of the workspace has that name)
        // reaches none of the workspace's functions, whatever their names.
        let first = path[0].as_str();
        let local = matches!(first, "crate" | "self" | "super" | "Self")
            || self.modules.contains(first)
            || self.files[file]
                .facts
                .uses
                .iter()
                .any(|import| import.alias == first);
        if !local {
            return Vec::new();
        }
        self.closest(Some(unit), candidates.into_iter())
    }

    /// A function reached through the module a path names when that
    /// module is a file of this unit that does not define it: through the
    /// module's imports of the name or its glob imports (`pub use
    /// super::refkernels::*`), or nowhere in the workspace where its only
    /// glob imports are another crate's (`pub use tch_cuda::*`). `None`
    /// where no file of the unit is that module, or it imports nothing by
    /// glob or by the name.
    fn reexported(
        &self,
        file: usize,
        path: &[String],
        free: &dyn Fn(&str) -> Vec<FnId>,
    ) -> Option<Vec<FnId>> {
        let (name, prefix) = path.split_last()?;
        let module = prefix.last()?;
        if matches!(module.as_str(), "crate" | "self" | "super" | "Self") {
            return None;
        }
        let unit = self.files[file].unit;
        let holder = (0..self.files.len())
            .find(|&f| self.files[f].unit == unit && self.files[f].module.last() == Some(module))?;
        let holder_module: Vec<&str> = self.files[holder]
            .module
            .iter()
            .map(String::as_str)
            .collect();
        let imports: Vec<&super::facts::UseFacts> = self.files[holder]
            .facts
            .uses
            .iter()
            .filter(|u| u.module.is_empty() && (u.alias == "*" || u.alias == *name))
            .collect();
        if imports.is_empty() {
            return None;
        }
        let mut reaches_elsewhere = false;
        for import in imports {
            let mut target = import.path.clone();
            if import.alias == "*" {
                target.push(name.clone());
            }
            let first = target[0].as_str();
            let local = matches!(first, "crate" | "self" | "super") || self.modules.contains(first);
            if !local {
                reaches_elsewhere = true;
                continue;
            }
            let last = target.last().map_or("", String::as_str);
            let found = self.path_callees(holder, &holder_module, &target, &free(last));
            if !found.is_empty() {
                return Some(found);
            }
        }
        reaches_elsewhere.then(Vec::new)
    }

    /// The candidates whose module matches a written path's module part.
    fn path_callees(
        &self,
        file: usize,
        here: &[&str],
        path: &[String],
        candidates: &[FnId],
    ) -> Vec<FnId> {
        let unit = self.files[file].unit;
        let prefix = &path[..path.len() - 1];
        let mut target_unit = Some(unit);
        let mut module: Vec<&str> = Vec::new();
        let mut rest = prefix;
        match prefix.first().map(String::as_str) {
            Some("crate") => rest = &prefix[1..],
            Some("self") => {
                module = here.to_vec();
                rest = &prefix[1..];
            }
            Some("super") => {
                module = here.to_vec();
                while rest.first().is_some_and(|s| s == "super") {
                    module.pop();
                    rest = &rest[1..];
                }
            }
            Some(first) => {
                if let Some(library) = self.library_of(first) {
                    target_unit = Some(library);
                    rest = &prefix[1..];
                } else {
                    // Relative to this module, or to the unit's root.
                    target_unit = None;
                }
            }
            None => {}
        }
        module.extend(rest.iter().map(String::as_str));
        let matching: Vec<FnId> = candidates
            .iter()
            .copied()
            .filter(|&id| target_unit.is_none_or(|u| self.files[id.0].unit == u))
            .filter(|&id| self.module_of(id).ends_with(&module))
            .collect();
        self.closest(Some(unit), matching.into_iter())
    }

    /// Whether a call on a receiver of this type dispatches to the impls of
    /// a trait (a trait object, a generic bounded by the trait, `self` in a
    /// trait's default method) rather than to one type's method.
    fn is_trait_dispatch(&self, owner: &str, name: &str) -> bool {
        self.traits.contains(owner)
            && !self.named(name).any(|id| {
                let f = self.function(id);
                f.owner.as_deref() == Some(owner) && !f.in_trait
            })
    }

    /// Whether some type implements `trait_name` without overriding a
    /// method that `overrides` of its impls override.
    fn keeps_default(&self, trait_name: &str, overrides: usize) -> bool {
        let implementors = self
            .traits_of
            .values()
            .filter(|traits| traits.contains(&trait_name))
            .count();
        implementors > overrides
    }

    /// Methods named `name` of type (or trait) `owner`, as seen from `from`.
    fn methods_of(&self, owner: &str, name: &str, from: Option<usize>) -> Vec<FnId> {
        self.methods_within(self.unaliased(owner, from), name, from, 0)
    }

    /// The crate type that a type alias visible from `from` stands for
    /// (through aliases of aliases), or the name itself: a crate type or
    /// trait of that name, or an alias of a type from elsewhere, is kept.
    fn unaliased<'n>(&'n self, mut name: &'n str, from: Option<usize>) -> &'n str {
        for _ in 0..MAX_DEPTH {
            if self.local_types.contains(name) || self.traits.contains(name) {
                break;
            }
            let Some(named) = self
                .type_aliases
                .get(name)
                .into_iter()
                .flatten()
                .find(|(file, named)| {
                    self.local_types.contains(named)
                        && from.is_none_or(|u| self.rank(u, *file).is_some())
                })
                .map(|(_, named)| *named)
            else {
                break;
            };
            name = named;
        }
        name
    }

    fn methods_within(
        &self,
        owner: &str,
        name: &str,
        from: Option<usize>,
        depth: usize,
    ) -> Vec<FnId> {
        let of_owner = |id: &FnId| {
            let f = self.function(*id);
            f.owner.as_deref() == Some(owner) && !f.in_trait
        };
        // Method-call syntax finds an inherent method before a trait's
        // method of the same name (an engine's `infer` beside its
        // `impl InferenceEngine`, which usually delegates to it), wherever
        // the trait impl sits: `NnModel::forward(self, x)` in another
        // crate's `impl Model for NnModel` is the inherent one, not itself.
        let inherent: Vec<FnId> = self.closest(
            from,
            self.named(name)
                .filter(of_owner)
                .filter(|&id| self.function(id).trait_impl.is_none()),
        );
        if !inherent.is_empty() {
            return inherent;
        }
        let own: Vec<FnId> = self.closest(from, self.named(name).filter(of_owner));
        if !own.is_empty() {
            return own;
        }
        if self.traits.contains(owner) {
            // A trait or generic receiver: every impl of the trait.
            let mut impls: Vec<FnId> = self.closest(
                from,
                self.named(name)
                    .filter(|&id| self.function(id).trait_impl.as_deref() == Some(owner)),
            );
            // The trait's default body runs for every implementor that does
            // not override it: a wrapper's override does not hide the
            // default the wrapped model keeps.
            let default: Vec<FnId> = self.closest(
                from,
                self.named(name).filter(|&id| {
                    let f = self.function(id);
                    f.in_trait && f.owner.as_deref() == Some(owner)
                }),
            );
            if !impls.is_empty() {
                if self.keeps_default(owner, impls.len()) {
                    impls.extend(default);
                }
                return impls;
            }
            if !default.is_empty() {
                return default;
            }
            // A supertrait's method, called on a trait object or a generic
            // bounded by the trait (`policy.score(..)` with `Policy: Scorer`).
            if depth < MAX_DEPTH {
                for supertrait in self.supertraits.get(owner).into_iter().flatten() {
                    let found = self.methods_within(supertrait, name, from, depth + 1);
                    if !found.is_empty() {
                        return found;
                    }
                }
            }
        }
        // A default method of a trait the type implements.
        let implemented = self.traits_of.get(owner);
        let defaults: Vec<FnId> = self.closest(
            from,
            self.named(name).filter(|&id| {
                let f = self.function(id);
                f.in_trait
                    && implemented.is_some_and(|t| t.contains(&f.owner.as_deref().unwrap_or("")))
            }),
        );
        if !defaults.is_empty() {
            return defaults;
        }
        let declared = self.closest(
            from,
            self.named(name).filter(|&id| self.function(id).in_trait),
        );
        if !declared.is_empty() || self.local_types.contains(owner) {
            return declared;
        }
        // A required method of a crate trait called on a type parameter
        // bounded by it (`A::encode(state)` with `A: Adapter`): every impl,
        // where nothing else in the crate has the name.
        let implementations: Vec<FnId> = self.named(name).collect();
        let only_trait_impls = implementations.iter().all(|&id| {
            self.function(id)
                .trait_impl
                .as_deref()
                .is_some_and(|t| self.supertraits.contains_key(t))
        });
        if only_trait_impls {
            self.closest(from, implementations.into_iter())
        } else {
            Vec::new()
        }
    }

    /// What every one of these functions returns, if they agree.
    fn common_return(&self, ids: &[FnId], depth: usize) -> Option<TyKind> {
        let first = self.return_kind(*ids.first()?, depth)?;
        ids[1..]
            .iter()
            .all(|&id| self.return_kind(id, depth).as_ref() == Some(&first))
            .then_some(first)
    }

    /// What a function returns: its return type, or what its body returns
    /// where that says more (see [`FnFacts::body_return`]).
    pub(super) fn return_kind(&self, id: FnId, depth: usize) -> Option<TyKind> {
        let function = self.function(id);
        match &function.body_return {
            None => Some(function.returns.clone()),
            Some(hidden) => self.resolve_within(hidden, Some(self.files[id.0].unit), depth + 1),
        }
    }

    fn common_field(&self, kinds: &[&TyKind]) -> Option<TyKind> {
        let first = *kinds.first()?;
        kinds.iter().all(|k| *k == first).then(|| first.clone())
    }

    // ----- types ---------------------------------------------------------

    /// What a deferred type turns out to be, if the crate says.
    pub(crate) fn resolve(&self, ty: &TypeRef, from: Option<usize>) -> Option<TyKind> {
        self.resolve_within(ty, from, 0)
    }

    fn resolve_within(&self, ty: &TypeRef, from: Option<usize>, depth: usize) -> Option<TyKind> {
        if depth > MAX_DEPTH {
            return None;
        }
        match ty {
            TypeRef::Named(name) if name == "Tensor" => Some(TyKind::Tensor),
            TypeRef::Named(name) | TypeRef::Instance { name, .. } => {
                Some(TyKind::Named(self.unaliased(name, from).to_owned()))
            }
            TypeRef::Written(kind) => Some(kind.clone()),
            TypeRef::Field { base, field } => match self.resolve_within(base, from, depth + 1) {
                Some(TyKind::Named(owner)) if self.structs.contains_key(owner.as_str()) => {
                    let structs = self.structs.get(owner.as_str())?;
                    // `self.model` in `impl Robot<Agent>`, `model: M`: an `Agent`.
                    let args = match &**base {
                        TypeRef::Instance { args, .. } => args.as_slice(),
                        _ => &[],
                    };
                    let kinds: Vec<&TyKind> = structs
                        .iter()
                        .filter(|(file, _)| from.is_none_or(|u| self.rank(u, *file).is_some()))
                        .flat_map(|(_, s)| {
                            let argument = s
                                .param_fields
                                .iter()
                                .find(|(n, _)| n == field)
                                .and_then(|(_, position)| args.get(*position))
                                .filter(|a| !matches!(a, TyKind::Other));
                            match argument {
                                Some(argument) => vec![argument],
                                None => s
                                    .fields
                                    .iter()
                                    .filter(|(n, _)| n == field)
                                    .map(|(_, k)| k)
                                    .collect(),
                            }
                        })
                        .collect();
                    self.common_field(&kinds)
                }
                // A type the crate does not define (a generic parameter,
                // `T` of `fn run<T>(f: impl FnOnce() -> T) -> T`): the
                // field's name says, if every struct having it agrees.
                Some(TyKind::Named(_)) | None => self
                    .fields
                    .get(field.as_str())
                    .and_then(|kinds| self.common_field(kinds)),
                Some(_) => None,
            },
            TypeRef::Part { base, index } => {
                // A (key, value) pair of a map being iterated.
                if let (
                    TypeRef::Part {
                        base: map,
                        index: None,
                    },
                    Some(i),
                ) = (&**base, index)
                {
                    if let Some(TyKind::Map(value)) = self.resolve_within(map, from, depth + 1) {
                        return match i {
                            0 => Some(TyKind::Other),
                            1 => Some(*value),
                            _ => None,
                        };
                    }
                }
                match (self.resolve_within(base, from, depth + 1), index) {
                    // `t.get(i)` and `t[i]` of a tensor are tensors.
                    (Some(TyKind::Tensors | TyKind::Tensor), None) => Some(TyKind::Tensor),
                    // A value taken for a tensor destructured as a tuple (a
                    // model's `forward` whose signature is not seen, a
                    // tensor method returning several): its parts are
                    // tensors.
                    (Some(TyKind::Tensor), Some(_)) => Some(TyKind::Tensor),
                    (Some(TyKind::Collection(element)), None) => Some(*element),
                    // `map[&key]`.
                    (Some(TyKind::Map(value)), None) => Some(*value),
                    (Some(TyKind::Tuple(parts)), Some(i)) => parts.get(*i).cloned(),
                    _ => None,
                }
            }
            TypeRef::Return { owner: None, name } => {
                let free = self.closest(
                    from,
                    self.named(name)
                        .filter(|&id| self.function(id).owner.is_none()),
                );
                self.common_return(&free, depth)
            }
            TypeRef::Return {
                owner: Some(owner),
                name,
            } => match self.resolve_within(owner, from, depth + 1) {
                Some(TyKind::Named(owner)) => {
                    let methods = self.methods_of(&owner, name, from);
                    if methods.is_empty() {
                        (is_constructor(name) || self.is_derived_setter(&owner, name))
                            .then_some(TyKind::Named(owner))
                    } else {
                        self.common_return(&methods, depth)
                    }
                }
                Some(TyKind::Tensor) => tensor_method_result(name),
                Some(TyKind::Map(value)) => map_method_result(*value, name),
                Some(_) => None,
                None if AMBIGUOUS_METHODS.contains(&name.as_str()) => None,
                None => {
                    let methods = self.closest(
                        from,
                        self.named(name)
                            .filter(|&id| self.function(id).has_receiver),
                    );
                    self.common_return(&methods, depth)
                }
            },
            TypeRef::Forward { owner, name } => match self.resolve_within(owner, from, depth + 1) {
                Some(TyKind::Named(owner)) if self.local_types.contains(owner.as_str()) => {
                    let methods = self.methods_of(&owner, name, from);
                    self.common_return(&methods, depth).or(Some(TyKind::Tensor))
                }
                _ => Some(TyKind::Tensor),
            },
            TypeRef::Output(callee) => match self.resolve_within(callee, from, depth + 1) {
                Some(TyKind::Callable(output)) => Some(*output),
                _ => None,
            },
            TypeRef::Unknown => None,
        }
    }

    /// Whether `name` is a method a struct's derived builder gives it, which
    /// hands back the same (builder) value: `X::builder()`, a setter named
    /// after one of its fields, `build()`. The builder counts as the struct
    /// itself, so that `X::builder().device(d).build()` stores into
    /// `X.device`.
    pub(crate) fn is_derived_setter(&self, owner: &str, name: &str) -> bool {
        self.structs.get(owner).is_some_and(|defs| {
            defs.iter().any(|(_, s)| {
                s.setters
                    && (matches!(name, "builder" | "build")
                        || s.fields.iter().any(|(field, _)| field == name))
            })
        })
    }

    /// Whether a site's conversion target is one tch converts tensors into:
    /// always, unless it is a name only an alias of the crate can make one.
    pub(crate) fn converts(&self, site: &Site) -> bool {
        site.alias
            .as_deref()
            .is_none_or(|alias| self.aliases.contains(alias))
    }

    /// Whether a site's condition on its subject's type holds.
    pub(crate) fn satisfied(&self, requirement: Option<&Requirement>, from: Option<usize>) -> bool {
        let Some(requirement) = requirement else {
            return true;
        };
        match self.resolve(&requirement.ty, from) {
            Some(TyKind::Tensor) => true,
            Some(TyKind::Named(name)) => {
                // A name only tch has, called on a crate type: tch's own
                // (through a trait such as `ModuleT`) unless the crate
                // defines the method on that type.
                !requirement.strict
                    && (!self.local_types.contains(name.as_str())
                        || requirement
                            .method
                            .as_deref()
                            .is_some_and(|m| self.methods_of(&name, m, from).is_empty()))
            }
            // Of a type left open: tch's, unless the crate defines a method
            // of that name itself (a bitboard's `is_nonzero`), which is then
            // as likely what runs.
            None => {
                !requirement.strict
                    && requirement
                        .method
                        .as_deref()
                        .is_none_or(|m| !self.defines_method(m))
            }
            Some(_) => false,
        }
    }

    /// Whether a crate type other than tch's `Tensor` has a method of this
    /// name (its own, or its impl of a crate trait).
    fn defines_method(&self, name: &str) -> bool {
        self.named(name).any(|id| {
            let f = self.function(id);
            f.has_receiver && f.owner.as_deref().is_some_and(|o| o != "Tensor")
        })
    }

    // ----- calls ---------------------------------------------------------

    /// Whether a call reaches one of several impls of a trait (so one impl
    /// that syncs is enough to report it), rather than candidates found by
    /// name (which must all sync).
    pub(crate) fn dispatches(&self, file: usize, call: &CallSite) -> bool {
        let from = Some(self.files[file].unit);
        match &call.callee {
            Callee::Method { receiver, name } => match self.resolve(receiver, from) {
                Some(TyKind::Named(owner)) => self.is_trait_dispatch(&owner, name),
                _ => false,
            },
            _ => false,
        }
    }

    /// The crate-local functions a call in `file` may reach.
    pub(crate) fn callees(&self, file: usize, call: &CallSite) -> Vec<FnId> {
        self.callees_matching(file, call, false)
    }

    /// The callees of a call, as [`CrateIndex::callees`], where a method of
    /// a receiver of unknown type is only one that takes as many arguments
    /// (`market.act(i, currency, candle, qty, long)` is not `Model::act(obs,
    /// n)`). What a call does, a model's run or an update, is not guessed
    /// from a method the call cannot be; where values live still errs
    /// towards every method of the name.
    pub(crate) fn callees_by_arity(&self, file: usize, call: &CallSite) -> Vec<FnId> {
        self.callees_matching(file, call, true)
    }

    fn callees_matching(&self, file: usize, call: &CallSite, by_arity: bool) -> Vec<FnId> {
        let from = Some(self.files[file].unit);
        match &call.callee {
            Callee::Free(path) => self.free_callees(file, call.context.function, path),
            Callee::Assoc { owner, name } => match self.resolve(owner, from) {
                Some(TyKind::Named(owner)) => self.methods_of(&owner, name, from),
                _ => Vec::new(),
            },
            Callee::Method { receiver, name } => match self.resolve(receiver, from) {
                Some(TyKind::Named(owner)) => self
                    .methods_of(&owner, name, from)
                    .into_iter()
                    .filter(|&id| self.function(id).has_receiver)
                    .collect(),
                Some(TyKind::Tensor) => self.closest(
                    from,
                    self.named(name).filter(|&id| {
                        let f = self.function(id);
                        f.owner.as_deref() == Some("Tensor")
                            && f.has_receiver
                            && !is_std_trait_impl(f)
                    }),
                ),
                Some(_) => Vec::new(),
                None if AMBIGUOUS_METHODS.contains(&name.as_str()) => Vec::new(),
                None => {
                    let mut found = self.closest(
                        from,
                        self.named(name).filter(|&id| {
                            let f = self.function(id);
                            f.has_receiver && !is_std_trait_impl(f)
                        }),
                    );
                    if by_arity {
                        found.retain(|&id| self.function(id).arity + 1 == call.args.len());
                    }
                    found
                }
            },
        }
    }

    /// Every call site of each crate-local function: (file, call index).
    fn callers(&self) -> std::cell::Ref<'_, Callers> {
        if self.callers.borrow().is_none() {
            let mut map: Callers = HashMap::new();
            for (file, info) in self.files.iter().enumerate() {
                for (index, call) in info.facts.calls.iter().enumerate() {
                    for callee in self.callees(file, call) {
                        map.entry(callee).or_default().push((file, index));
                    }
                }
            }
            *self.callers.borrow_mut() = Some(map);
        }
        std::cell::Ref::map(self.callers.borrow(), |c| c.as_ref().expect("just filled"))
    }

    /// The value every call of `id` passes for its input at `param` (the
    /// receiver first), where each call outside tests passes the same
    /// `bool` known there (see [`CallSite::literals`]) and there is one.
    /// Not asked of trait methods (a `dyn` call reaches them unseen) nor
    /// of a crate prepared for crates.io, whose callers are elsewhere.
    pub(crate) fn fixed_argument(&self, id: FnId, param: usize) -> Option<bool> {
        let function = self.function(id);
        if function.in_trait || function.trait_impl.is_some() || self.files[id.0].published {
            return None;
        }
        let callers = self.callers();
        let mut value = None;
        for &(file, index) in callers.get(&id)? {
            let call = &self.files[file].facts.calls[index];
            if matches!(call.context.cold, Some(Cold::Test)) {
                continue;
            }
            let passed = call.literals.get(param).copied().flatten()?;
            if *value.get_or_insert(passed) != passed {
                return None;
            }
        }
        value
    }

    /// Functions only test code calls: every call of each (there is at
    /// least one) sits in test code or in another such function. Their
    /// loops run when the tests run, never in a release build. A crate
    /// prepared for crates.io is left out: other crates call its functions,
    /// whatever its own tests do. Trait
    /// methods are left out, since a call through `dyn Trait` or a generic
    /// reaches them without naming them.
    pub(crate) fn test_only(&self) -> HashSet<FnId> {
        let callers = self.callers();
        let mut only: HashSet<FnId> = HashSet::new();
        loop {
            let mut grew = false;
            for (&id, sites) in callers.iter() {
                if only.contains(&id) {
                    continue;
                }
                let function = self.function(id);
                if function.in_trait || function.trait_impl.is_some() || self.files[id.0].published
                {
                    continue;
                }
                // Its own recursive calls say nothing of who calls it.
                let mut outside = sites.iter().filter_map(|&(file, index)| {
                    let call = &self.files[file].facts.calls[index];
                    let caller = call.context.function.map(|f| (file, f));
                    (caller != Some(id)).then_some((call, caller))
                });
                let mut any = false;
                let all_tests = outside.all(|(call, caller)| {
                    any = true;
                    matches!(call.context.cold, Some(Cold::Test))
                        || caller.is_some_and(|caller| only.contains(&caller))
                }) && any;
                if all_tests {
                    only.insert(id);
                    grew = true;
                }
            }
            if !grew {
                return only;
            }
        }
    }

    /// Functions that never run: those nothing in the workspace calls (no
    /// call resolves to one but its own recursive calls, and its name
    /// appears in no code of the workspace but at a definition, `fn name`,
    /// as a module, `mod name`, `name::`, or in those calls: not passed as a
    /// value, not called from a macro the walk does not read), and those
    /// called only from such functions, where
    /// every use of the name is one of those calls, in a program (another
    /// crate may call a library's functions). Each maps to the
    /// function nothing calls that it is reached from (itself for those).
    /// `texts` are the sources of all the workspace's files, parsed or not,
    /// comments and string literals aside (`/* old(..) */` calls nothing);
    /// a file without its text counts as naming everything. Entry points
    /// are left out: `main`, trait methods (reached through `dyn` and
    /// generics), and everything of a crate prepared for crates.io, whose
    /// functions other crates call.
    pub(crate) fn uncalled(
        &self,
        texts: &[Option<std::borrow::Cow<'_, str>>],
    ) -> HashMap<FnId, FnId> {
        let callers = self.callers();
        let mut by_name: HashMap<&str, Vec<FnId>> = HashMap::new();
        for (file, info) in self.files.iter().enumerate() {
            if info.published {
                continue;
            }
            for (f, function) in info.facts.functions.iter().enumerate() {
                if function.name == "main" || function.in_trait || function.trait_impl.is_some() {
                    continue;
                }
                by_name
                    .entry(function.name.as_str())
                    .or_default()
                    .push((file, f));
            }
        }
        if by_name.is_empty() || texts.iter().any(Option::is_none) {
            return HashMap::new();
        }
        // The names only methods bear (`methods: true`), or only free
        // functions.
        let borne_only_by = |methods: bool| -> HashSet<&str> {
            by_name
                .iter()
                .filter(|(_, ids)| {
                    ids.iter()
                        .all(|&id| self.function(id).owner.is_some() == methods)
                })
                .map(|(&name, _)| name)
                .collect()
        };
        // A name only methods bear is used through a receiver or a path
        // (`pool.stats()`, `Pool::stats`): a local `stats` names nothing.
        let methods_only = borne_only_by(true);
        // A name only free functions bear is never used through a receiver:
        // `model.run(..)` calls another type's method, not a free `run`.
        let free_only = borne_only_by(false);
        let mut uses: HashMap<&str, usize> = HashMap::new();
        for text in texts.iter().flatten() {
            let code = crate::prefilter::without_comments_and_literals(text);
            let mut previous = "";
            let mut rest = code.as_str();
            while let Some(start) = rest.find(|c: char| c.is_alphanumeric() || c == '_') {
                let before = rest[..start].trim_end().chars().next_back();
                let tail = &rest[start..];
                let end = tail
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(tail.len());
                let word = &tail[..end];
                rest = &tail[end..];
                if methods_only.contains(word) && !matches!(before, Some('.' | ':')) {
                    previous = word;
                    continue;
                }
                if free_only.contains(word) && before == Some('.') {
                    previous = word;
                    continue;
                }
                // An import runs nothing: `use a::{train, eval};` is
                // skipped, a re-export (`pub use`) is kept as a use.
                if word == "use" && previous != "pub" {
                    rest = rest.find(';').map_or("", |semi| &rest[semi..]);
                    previous = "";
                    continue;
                }
                // A use: not its definition (`fn name`), not a module of
                // the same name (`mod name`, `name::..`); a turbofish
                // (`name::<A, B>(..)`) is a use.
                if let Some((&name, _)) = by_name.get_key_value(word) {
                    let after = rest.trim_start();
                    let module =
                        after.starts_with("::") && !after[2..].trim_start().starts_with('<');
                    if !matches!(previous, "fn" | "mod") && !module {
                        *uses.entry(name).or_default() += 1;
                    }
                }
                previous = word;
            }
        }
        // Names whose every use is a call that resolves to a function of
        // that name: their calls are all the ways to reach them.
        let only_called: Vec<&Vec<FnId>> = by_name
            .iter()
            .filter(|(name, ids)| {
                let sites: HashSet<&(usize, usize)> = ids
                    .iter()
                    .filter_map(|id| callers.get(id))
                    .flatten()
                    .collect();
                uses.get(*name).is_some_and(|&n| n <= sites.len())
            })
            .map(|(_, ids)| ids)
            .collect();
        let caller_of = |(file, index): (usize, usize)| {
            self.files[file].facts.calls[index]
                .context
                .function
                .map(|f| (file, f))
        };
        // A library's function may be called by other crates: where it is
        // prepared for crates.io, or where nothing in sight runs at all (a
        // library without a program, a Python extension), its functions are
        // what others run. A library beside the programs that use it is
        // run only as far as they reach it.
        // A program: a binary or example, or `src/main.rs` beside the
        // library (a root of the library's unit that defines `main`; a
        // build script's `main` runs no library code).
        let programs_in_sight = self.files.iter().any(|f| {
            f.program
                || (f.module.is_empty()
                    && self.units[f.unit].target == super::scope::Target::Lib
                    && f.facts
                        .functions
                        .iter()
                        .any(|g| g.name == "main" && g.owner.is_none()))
        });
        let run_from_sight = |id: &FnId| {
            let file = &self.files[id.0];
            !file.published && (file.program || programs_in_sight)
        };
        // Nothing calls or names them, or only they call themselves; or,
        // where only what is in sight runs them, every use of their name is
        // a call that resolves to another function of that name
        // (`supervised::train()` beside a `ppo::train` nothing calls).
        let unnamed = by_name
            .iter()
            .filter(|(name, _)| !uses.contains_key(*name))
            .flat_map(|(_, ids)| ids.iter())
            .chain(
                only_called
                    .iter()
                    .copied()
                    .flatten()
                    // A library's method may be reached through a receiver
                    // whose type the walk does not see: only its free
                    // functions are known by their calls.
                    .filter(|id| {
                        self.files[id.0].program
                            || (run_from_sight(id) && self.function(**id).owner.is_none())
                    }),
            )
            .filter(|id| !callers.contains_key(id));
        let only_recursive = only_called.iter().copied().flatten().filter(|id| {
            callers
                .get(id)
                .is_some_and(|sites| sites.iter().all(|&site| caller_of(site) == Some(**id)))
        });
        let mut never: HashMap<FnId, FnId> =
            unnamed.chain(only_recursive).map(|&id| (id, id)).collect();
        if never.is_empty() {
            return never;
        }
        loop {
            let mut grew = false;
            for &id in only_called.iter().copied().flatten() {
                if never.contains_key(&id) || !run_from_sight(&id) {
                    continue;
                }
                let Some(sites) = callers.get(&id) else {
                    continue;
                };
                let mut root = None;
                let all_never = sites.iter().all(|&site| {
                    let caller = caller_of(site);
                    match caller.and_then(|c| never.get(&c).map(|&r| (c, r))) {
                        _ if caller == Some(id) => true,
                        Some((_, r)) => {
                            root.get_or_insert(r);
                            true
                        }
                        None => false,
                    }
                });
                if let Some(root) = root.filter(|_| all_never) {
                    never.insert(id, root);
                    grew = true;
                }
            }
            if !grew {
                return never;
            }
        }
    }

    // ----- chains --------------------------------------------------------

    /// Computes which functions sync when called, directly or through
    /// calls: once per call (a read outside the function's loops) or in a
    /// loop of their own. A read in a function's own loop is reported there
    /// too, but a loop calling the function waits on every one of its
    /// iterations all the same.
    /// `levels`: the workspace's loop levels (from
    /// [`CrateIndex::loop_levels`]): which functions run a loop of steps of
    /// their own, and which loops run steps; `None` where only which
    /// functions sync matters.
    pub(crate) fn summarize(&self, levels: Option<&LoopLevels>) -> Summary {
        let no_epochs = HashSet::new();
        let epochs = levels.map_or(&no_epochs, |l| &l.epochs);
        // A loop that runs steps (or sits in one), unlike a loop over a
        // tensor's items.
        let runs_steps = |file: usize, loop_id: usize| {
            levels.is_some_and(|l| {
                let level = l.get(file, loop_id);
                !level.stepless && !level.walks_items
            })
        };
        // A loop over a model's layers is the per-layer forward passes: a
        // call whose reads run in one is judged there, not where the whole
        // forward is called.
        let per_layer =
            |file: usize, loop_id: usize| self.files[file].facts.loops[loop_id].over_layers;
        let mut summary = Summary::default();
        // Reads outside loops first: a function keeps a few ways it syncs,
        // and the once-per-call ones say the most.
        let mut sites: Vec<(usize, usize, &Site)> = self
            .files
            .iter()
            .enumerate()
            .flat_map(|(file_index, file)| {
                file.facts
                    .sites
                    .iter()
                    .filter_map(move |site| Some((file_index, site.context.function?, site)))
            })
            .collect();
        sites.sort_by_key(|(_, _, site)| site.context.loop_id.is_some());
        for (file_index, function, site) in sites {
            let from = Some(self.files[file_index].unit);
            if !self.satisfied(site.requirement.as_ref(), from) || !self.converts(site) {
                continue;
            }
            // Only parameters are left open: everything else is decided now.
            let condition = self.settle(&site.place, file_index);
            if condition == Place::Cpu {
                continue;
            }
            let mut steps = site.via.clone();
            steps.push(site.hit.op.clone());
            let chain = Chain {
                rule: site.hit.rule,
                steps,
                periodic: site.context.periodic.clone(),
                cold: site.context.cold.clone(),
                pattern: site.hit.pattern,
                message: site.hit.message.clone(),
                reach: None,
                fix: site.hit.fix,
                condition,
                looped: site
                    .context
                    .loop_id
                    .map(|_| self.function((file_index, function)).display_name()),
                looped_steps: site
                    .context
                    .loop_id
                    .is_some_and(|l| runs_steps(file_index, l) || per_layer(file_index, l)),
                epoch: (site.context.loop_id.is_none() && epochs.contains(&(file_index, function)))
                    .then(|| self.function((file_index, function)).display_name()),
            };
            offer(&mut summary.syncs, (file_index, function), chain);
        }
        let mut calls: Vec<(usize, FnId, Vec<FnId>, &CallSite)> = self
            .files
            .iter()
            .enumerate()
            .flat_map(|(file_index, file)| {
                file.facts.calls.iter().map(move |call| (file_index, call))
            })
            .filter_map(|(file_index, call)| {
                let function = call.context.function?;
                let callees = self.callees(file_index, call);
                (!callees.is_empty()).then_some((file_index, (file_index, function), callees, call))
            })
            .collect();
        calls.sort_by_key(|(_, _, _, call)| call.context.loop_id.is_some());
        // A function's chains only grow (up to a few), so this terminates.
        loop {
            let mut changed = false;
            for (file, caller, callees, call) in &calls {
                let Some(chain) = self.chain_through(&summary.syncs, *file, call, callees) else {
                    continue;
                };
                let condition = self.settle(&chain.condition, *file);
                if condition == Place::Cpu {
                    continue;
                }
                let layers = call.context.loop_id.is_some_and(|l| per_layer(*file, l));
                // A loop that runs until a condition holds (`while`,
                // `loop`) calling a function that computes and reads anew
                // each time (a sliding window's correlation, a solver's
                // iterations) repeats steps of its own, whatever model it
                // runs.
                let repeats_calls = |l: usize| {
                    chain.fix != Fix::Element && self.files[*file].facts.loops[l].open_ended
                };
                let (looped, looped_steps) = match &chain.looped {
                    Some(_) if chain.looped_steps || !layers => {
                        (chain.looped.clone(), chain.looped_steps)
                    }
                    _ => (
                        call.context
                            .loop_id
                            .map(|_| self.function(*caller).display_name()),
                        call.context.loop_id.is_some_and(|l| {
                            runs_steps(*file, l) || per_layer(*file, l) || repeats_calls(l)
                        }),
                    ),
                };
                changed |= offer(
                    &mut summary.syncs,
                    *caller,
                    Chain {
                        condition,
                        looped,
                        looped_steps,
                        ..chain
                    },
                );
            }
            if !changed {
                break;
            }
        }
        summary
    }

    /// Decides the parts of a place that do not depend on the function's
    /// parameters: `Cpu` if they put it on the CPU, else the parameter
    /// conditions alone (`Device` if there are none).
    fn settle(&self, place: &Place, file: usize) -> Place {
        if self.cpu_only {
            return Place::Cpu;
        }
        let Place::CpuIf(refs) = place else {
            return place.clone();
        };
        let mut params = Vec::new();
        for reference in refs {
            if holds_param(reference) {
                params.push(reference.clone());
            } else if self.is_cpu(&Place::of(reference.clone()), file, None) {
                return Place::Cpu;
            }
        }
        if params.is_empty() {
            Place::Device
        } else {
            Place::CpuIf(params)
        }
    }

    /// The chain of a call whose every candidate callee syncs for these
    /// arguments.
    pub(crate) fn chain_through(
        &self,
        syncs: &HashMap<FnId, Vec<Chain>>,
        file: usize,
        call: &CallSite,
        callees: &[FnId],
    ) -> Option<Chain> {
        if callees.is_empty() {
            return None;
        }
        let any = callees.len() > 1 && self.dispatches(file, call);
        // Nothing to substitute into where no callee syncs, or where a call
        // that is no dispatch reaches one that does not.
        let syncing_callees = callees.iter().filter(|c| syncs.contains_key(c)).count();
        if syncing_callees == 0 || (!any && syncing_callees < callees.len()) {
            return None;
        }
        let args: Vec<Place> = call
            .args
            .iter()
            .map(|a| a.clone().unwrap_or_default())
            .collect();
        let mut chosen: Option<(FnId, Chain)> = None;
        let mut syncing = 0;
        for &callee in callees {
            let Some(chains) = syncs.get(&callee) else {
                if any {
                    continue;
                }
                return None;
            };
            // The first way this callee syncs that these arguments do not
            // put on the CPU; unguarded and hot ones first.
            let mut usable: Vec<&Chain> = chains
                .iter()
                .filter(|c| {
                    let condition = substitute(&c.condition, &args);
                    !self.is_cpu(&condition, file, call.context.function)
                })
                .collect();
            usable.sort_by_key(|c| c.weakness());
            let Some(chain) = usable.first() else {
                if any {
                    continue;
                }
                return None;
            };
            syncing += 1;
            if chosen
                .as_ref()
                .is_none_or(|(_, c)| c.weakness() > chain.weakness())
            {
                chosen = Some((callee, (*chain).clone()));
            }
        }
        let (callee, inner) = chosen?;
        let mut steps = vec![self.function(callee).display_name()];
        steps.extend(inner.steps.iter().cloned());
        // Only this call's count: a count from a call further down the
        // chain is about that call.
        let reach = if any && syncing < callees.len() {
            Some(Reach {
                syncing,
                of: callees.len(),
            })
        } else {
            inner.reach
        };
        Some(Chain {
            steps,
            reach,
            periodic: call.context.periodic.clone().or(inner.periodic.clone()),
            cold: call.context.cold.clone().or(inner.cold.clone()),
            condition: substitute(&inner.condition, &args),
            ..inner
        })
    }
}

/// Records a way a function syncs unless it already has one like it;
/// returns whether anything changed.
fn offer(syncs: &mut HashMap<FnId, Vec<Chain>>, id: FnId, chain: Chain) -> bool {
    /// Ways kept per function.
    const MAX_CHAINS: usize = 4;
    let chains = syncs.entry(id).or_default();
    if let Some(existing) = chains.iter_mut().find(|c| c.condition == chain.condition) {
        if chain.weakness() < existing.weakness() {
            *existing = chain;
            return true;
        }
        return false;
    }
    if chains.len() >= MAX_CHAINS {
        return false;
    }
    chains.push(chain);
    true
}

/// An impl of a standard-library trait whose methods method-call syntax
/// rarely reaches: operators, formatting, conversions, iteration. A call
/// `t.eq(x)` on a tch tensor is its inherent `eq`, not `PartialEq::eq`.
fn is_std_trait_impl(function: &FnFacts) -> bool {
    function.trait_impl.as_deref().is_some_and(|t| {
        matches!(
            t,
            "PartialEq"
                | "Eq"
                | "PartialOrd"
                | "Ord"
                | "Hash"
                | "Debug"
                | "Display"
                | "Clone"
                | "Drop"
                | "Default"
                | "From"
                | "Into"
                | "TryFrom"
                | "TryInto"
                | "Add"
                | "Sub"
                | "Mul"
                | "Div"
                | "Rem"
                | "Neg"
                | "Not"
                | "AddAssign"
                | "SubAssign"
                | "MulAssign"
                | "DivAssign"
                | "Index"
                | "IndexMut"
                | "Deref"
                | "DerefMut"
                | "Sum"
                | "Product"
                | "Iterator"
                | "IntoIterator"
                | "FromIterator"
                | "Extend"
                | "AsRef"
                | "AsMut"
                | "Borrow"
                | "FromStr"
                | "Serialize"
                | "Deserialize"
        )
    })
}

/// What a method of a map returns, by the kind of the map's values: a value
/// (`get`, `remove`), the values (`values`), or the map's pairs again
/// (`iter`, `into_iter`, `drain`).
fn map_method_result(value: TyKind, name: &str) -> Option<TyKind> {
    match name {
        "get" | "get_mut" | "remove" => Some(value),
        "iter" | "iter_mut" | "into_iter" | "drain" => Some(TyKind::Map(Box::new(value))),
        "values" | "values_mut" | "into_values" => Some(match value {
            TyKind::Tensor => TyKind::Tensors,
            value => TyKind::Collection(Box::new(value)),
        }),
        _ => None,
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
