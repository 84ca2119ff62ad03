//! Plain data a file's analysis produces. Syntax trees cannot leave the
//! thread that parsed them (their spans index a thread-local source map), so
//! everything the crate-level pass needs is copied out into these types.

use super::values::{Place, Requirement, TypeRef};
use crate::rules::Hit;
use crate::suppress::Suppressions;

/// A source range: 1-based lines, 1-based columns counted in characters,
/// the end column just past the last character.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Loc {
    /// Line of the first character.
    pub line: usize,
    /// Column of the first character.
    pub column: usize,
    /// Line of the last character.
    pub end_line: usize,
    /// Column just past the last character.
    pub end_column: usize,
}

/// Why a piece of code does not run in the hot path of a release build.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Cold {
    /// Test code: `#[test]`, `#[cfg(test)]`, a file under `tests/`.
    Test,
    /// `debug_assert!` and `#[cfg(debug_assertions)]`: not in release builds.
    DebugAssertion,
    /// A log macro below `info` (`debug!`, `trace!`): its arguments are
    /// evaluated only when that level is enabled.
    DebugLog(String),
    /// Code under a cargo feature that the crate's `default` does not enable.
    Feature(String),
    /// A function nothing in its workspace calls or names (an older
    /// version kept beside its successor), or one only such functions
    /// call: it never runs in the program.
    Uncalled {
        /// The function.
        function: String,
        /// The function nothing calls that it is reached from (the
        /// function itself where nothing calls it).
        root: String,
    },
    /// Code that runs only once something has failed: the arguments of
    /// `Err(..)`, of `panic!` and its kin (`unreachable!`, `bail!`, ...),
    /// and the message of `assert!` or `ensure!`.
    Failure,
    /// A branch a boolean constant of the file turns off (`if DEBUG { .. }`
    /// with `const DEBUG: bool = false`, the `else` of `if !SAVE`): no
    /// build runs it while the constant stays as it is.
    Disabled {
        /// The condition, as written.
        condition: String,
        /// The branch is the `else`, run when the condition is false.
        otherwise: bool,
    },
    /// A whole tensor copied to the host by a function that writes it out
    /// (to a file or a stream: `write_all`, `File::create`, `fs::write`):
    /// an export, whose copy is the point.
    Export,
    /// A whole tensor copied to the host and bound to a local that a writer
    /// then takes (`let rows = Vec::<f32>::try_from(&out)?;
    /// write_features(&rows)`): the copy is what is written out.
    Written {
        /// The writer, as called.
        writer: String,
    },
    /// A branch on a `bool` parameter that every call of its function
    /// passes the other way (`if debug { .. }` where each call passes
    /// `false`): no call of the program takes it.
    FixedArgument {
        /// The parameter.
        name: String,
        /// The value that takes the branch.
        on: bool,
        /// The function, as shown.
        function: String,
    },
}

/// A branch taken only when a `bool` parameter of the enclosing function
/// has one value (`if debug { .. }`, the `else` of `if verbose`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FlagGuard {
    /// The parameter's position among the function's inputs, the
    /// receiver first.
    pub param: usize,
    /// The parameter's name.
    pub name: String,
    /// The value that takes the branch.
    pub on: bool,
}

/// Where in the control flow something happens.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Context {
    /// The innermost enclosing loop; `None` at function level.
    pub loop_id: Option<usize>,
    /// The periodic guard between that loop and here (`step % 100 == 0`).
    pub periodic: Option<String>,
    /// The enclosing function.
    pub function: Option<usize>,
    /// First line of the enclosing statement, for allow comments.
    pub statement_line: usize,
    /// The innermost enclosing statement, numbered within the file: one
    /// finding per statement.
    pub statement: usize,
    /// Set when the code does not run in a release hot path.
    pub cold: Option<Cold>,
    /// The outermost branch on a `bool` parameter of the function around
    /// here: the crate pass decides whether any call takes it.
    pub flag: Option<FlagGuard>,
}

impl Context {
    /// The same place, counted in another loop (`None`: outside loops).
    pub fn in_loop(&self, loop_id: Option<usize>) -> Context {
        Context {
            loop_id,
            ..self.clone()
        }
    }
}

/// How the fix for a read reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fix {
    /// The rule's standing advice.
    Rule,
    /// Printing or formatting: format lazily or less often.
    Format,
    /// One element of a tensor per read: copy the tensor once.
    Element,
    /// A bulk copy of a tensor to the host.
    Bulk,
    /// An explicit wait for the whole device.
    Wait,
}

/// A place that syncs, or would if its subject turns out to be a device tensor.
#[derive(Clone, Debug)]
pub struct Site {
    pub(crate) hit: Hit,
    /// Where to point.
    pub loc: Loc,
    /// Loop and guard context.
    pub context: Context,
    /// Condition for the crate-level pass, if the subject's type is deferred.
    pub requirement: Option<Requirement>,
    /// Where the subject lives; a subject on the CPU never syncs.
    pub place: Place,
    /// Local closures the sync is reached through (`closure `log``).
    pub via: Vec<String>,
    /// The subject is a whole value that changes with each iteration (a
    /// loop item), not a part of a tensor nor a value from outside the loop.
    pub item: bool,
    /// The subject is bound anew each time round its loop, whole (a loop
    /// item, or a value taken or computed in the iteration), not a part of
    /// one tensor nor a value from outside the loop.
    pub varies: bool,
    /// A conversion into a type the file names but does not define
    /// (`AttentionHead::try_from(t)`): it counts only if the crate defines
    /// that name as an alias of a type tch converts tensors into.
    pub alias: Option<String>,
}

/// A call that may reach a crate-local function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Callee {
    /// `name(..)` or `module::name(..)`: the path as written.
    Free(Vec<String>),
    /// `Type::name(..)` or `Self::name(..)`.
    Assoc {
        /// The qualifying type.
        owner: TypeRef,
        /// The function's name.
        name: String,
    },
    /// `receiver.name(..)`.
    Method {
        /// The receiver's type, as far as known.
        receiver: TypeRef,
        /// The method's name.
        name: String,
    },
}

impl Callee {
    /// The function's name.
    pub fn name(&self) -> &str {
        match self {
            Callee::Free(path) => path.last().map_or("", String::as_str),
            Callee::Assoc { name, .. } | Callee::Method { name, .. } => name,
        }
    }
}

/// A call site, for the interprocedural pass.
#[derive(Clone, Debug)]
pub struct CallSite {
    /// What is called.
    pub callee: Callee,
    /// Where to point.
    pub loc: Loc,
    /// Loop and guard context.
    pub context: Context,
    /// Where each argument lives (the receiver first, for method calls);
    /// `None` for arguments that hold no data.
    pub args: Vec<Option<Place>>,
    /// Some argument is a whole loop item (see [`Site::item`]).
    pub item: bool,
    /// Each argument that is a `bool` known where it is passed (a literal,
    /// a local bound to one, a constant of the file), aligned with `args`.
    pub literals: Vec<Option<bool>>,
    /// What the call returns is bound to a local that a writer then takes
    /// (`let (features, mean) = extract(..); write_features(&features)`),
    /// as called: where the call's read is a whole copy, it is what is
    /// written out.
    pub written_by: Option<String>,
}

/// The most iterations of a loop counted as a fixed, unrolled sequence.
pub const FIXED_LOOP_MAX: usize = 16;

/// One loop (including iterator-adapter closures such as `for_each`).
#[derive(Clone, Debug, Default)]
pub struct LoopFacts {
    /// The enclosing loop.
    pub parent: Option<usize>,
    /// It runs a few times, fixed in the source: a range between two
    /// literals or an array literal (`for i in 0..8`, `for key in keys`
    /// where `keys` is an array literal), at most [`FIXED_LOOP_MAX`] times.
    pub fixed: bool,
    /// It walks a list of string literals written out in the source (`for
    /// text in ["..", ".."]`, a local bound to `vec![..]` of them): a demo's
    /// few inputs, each answered once, like requests.
    pub listed: bool,
    /// The enclosing function.
    pub function: Option<usize>,
    /// Line of the `for`/`while`/`loop` keyword or the adapter's closure.
    pub line: usize,
    /// A loop statement or `for_each`, rather than a `.map(..)` over values.
    pub statement: bool,
    /// Its body (not counting nested loops) runs an update: a backward
    /// pass, an optimizer or environment step.
    pub update: bool,
    /// Its body (not counting nested loops) runs a model: `forward`,
    /// `apply`, a generation step.
    pub forward: bool,
    /// Its body (not counting nested loops) calls a method or function
    /// named like a model's forward pass (`forward`, `forward_t`) that a
    /// function of the crate may define: a model only if that function is
    /// one (a tree search's `node.forward(..)` descends the tree).
    pub forward_named: bool,
    /// Its body (not counting nested loops) calls a bare `step()` on a
    /// value the crate's own type may be: an optimizer step, unless every
    /// method it reaches is the crate's own in a file that never mentions
    /// tch (a game or a search advancing itself: `loop { match
    /// self.step() { .. } }`).
    pub update_named: bool,
    /// It is driven by incoming requests (`recv()`, `incoming()`,
    /// `accept()`): each iteration answers one.
    pub request: bool,
    /// Its requests come over a channel (`rx.recv()`) from another thread
    /// of the program, rather than from a socket or standard input.
    pub from_channel: bool,
    /// It, or a loop inside it, hands results on: sends over a channel
    /// (`tx.send(v)`) or wakes a queue's waiters (`cv.notify_all()`); a
    /// stage of a pipeline rather than a sink.
    pub sends: bool,
    /// Not a loop in the source but `t.iter::<T>()`, which reads one
    /// element per item.
    pub element_iter: bool,
    /// It repeats its body rather than walking over items: a `loop`, a
    /// `while`, or a `for` over a range of numbers (per-token generation,
    /// an episode of environment steps), where a loop over a collection
    /// walks over data or over parts of one step (layers, heads).
    pub repeats: bool,
    /// It is a `loop` or a `while`: it runs until a condition holds, not
    /// over a count or a collection (a sliding window's positions, a
    /// search until its budget is spent).
    pub open_ended: bool,
    /// It walks over a collection held in a field of `self` (`for layer in
    /// &self.layers`, `self.heads.iter().map(..)`): the parts of one model,
    /// so a model run in it is one forward pass, not a loop of steps.
    pub over_components: bool,
    /// It walks a model's parameters (`for (name, t) in vs.variables()`):
    /// one read per parameter, a step only where the loop runs per step.
    pub over_parameters: bool,
    /// It sits behind a periodic guard of the loop around it (an
    /// evaluation, or an update phase, every N steps): it makes no epoch
    /// of that loop.
    pub periodic: bool,
    /// The counter of a loop over a range of numbers (`for step in
    /// 0..n`): a branch taken when it equals one value runs once.
    pub counter: Option<String>,
    /// It walks over parallel environments (`for i in 0..num_envs`, `for
    /// env in envs.iter_mut()`): its iterations together are one step of
    /// every environment, so the steps it runs are those of the loop
    /// around it, which stays the step loop.
    pub over_environments: bool,
    /// It walks over a model's layers (`for layer in 0..cfg.num_layers`,
    /// `for layer in &self.layers`): per-layer forward passes, where a
    /// read is judged, rather than at a call of the whole forward.
    pub over_layers: bool,
    /// It walks a collection its function was handed (`for state in
    /// states.iter()` over a parameter, `states.iter().map(..)`): the items
    /// one call brings, not a loader or a range of its own.
    pub over_inputs: bool,
    /// It steps an environment itself: a `step` given the action
    /// (`env.step(action)`), where an optimizer's `step()` takes none.
    pub steps_environment: bool,
    /// Its body hands a model's output on to its next iteration: it
    /// assigns a name bound outside the loop from a model run (`hidden =
    /// model.forward_one(&next, &mut cache)`). A generation loop: each
    /// iteration is one step, whatever loops the functions it calls run.
    pub feeds_back: bool,
    /// Its body assigns a name bound before it (`token = next`): each
    /// iteration hands a value on to the next.
    pub carries: bool,
    /// It repeats its body a count of times (`for _ in 0..n`), outside any
    /// other loop, between an `Instant::now()` bound before it and that
    /// instant's `elapsed()` after it, in one block, and hands nothing on
    /// from one iteration to the next: a latency benchmark, each iteration
    /// one request whose answer is timed.
    pub timed: bool,
}

/// A syntactic type, classified.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TyKind {
    /// `Tensor` (also behind `&`, `Option`, `Result`, `Box`, ...).
    Tensor,
    /// `Vec<Tensor>`, `&[Tensor]`, `[Tensor; N]`.
    Tensors,
    /// Another named type, by its last path segment.
    Named(String),
    /// A tuple.
    Tuple(Vec<TyKind>),
    /// A collection of other values (`Vec<Block>`, `Vec<(f64, Tensor)>`).
    Collection(Box<TyKind>),
    /// A map (`HashMap<String, Tensor>`, `BTreeMap<K, (Tensor, Tensor)>`),
    /// by the kind of its values: indexing it gives a value, iterating it
    /// gives (key, value) pairs.
    Map(Box<TyKind>),
    /// `tch::Device`.
    Device,
    /// A number or a `bool` (`f64`, `i64`, `usize`): `Tensor::from` of one
    /// is 0-dim.
    Number,
    /// A module built from a closure that moves its input
    /// (`nn::func(move |xs| xs.to_device(device).apply(&net))`, an `add_fn`
    /// of one in an `nn::seq()`): it computes where it moves its input,
    /// whatever the input.
    MovingModule,
    /// A closure or function pointer (`fn(&Tensor) -> Tensor`,
    /// `Box<dyn Fn(&Tensor, &Tensor) -> Tensor>`, a type parameter bounded
    /// by `Fn`), by what calling it returns.
    Callable(Box<TyKind>),
    /// Anything else: scalars, strings, unit, unknown shapes.
    Other,
}

/// A function or method definition.
#[derive(Clone, Debug)]
pub struct FnFacts {
    /// The `impl` or `trait` it belongs to, by type name.
    pub owner: Option<String>,
    /// Whether it is a default method of a trait (so `owner` is the trait).
    pub in_trait: bool,
    /// The trait an `impl Trait for Type` block implements.
    pub trait_impl: Option<String>,
    /// Its name.
    pub name: String,
    /// Inline `mod` blocks around it within the file.
    pub module: Vec<String>,
    /// Whether it takes `self`.
    pub has_receiver: bool,
    /// How many inputs it takes besides `self`.
    pub arity: usize,
    /// Its return type.
    pub returns: TyKind,
    /// The type of what the body returns, where it says more than the
    /// declared type: the one type behind `-> impl Module` (rather than
    /// every impl of the trait; `TypeRef::Unknown` when the body does not
    /// say), or a module that moves its input behind `-> nn::Sequential`.
    pub body_return: Option<TypeRef>,
    /// Where what it returns lives, in terms of its parameters.
    pub return_place: Place,
    /// Its body runs an update outside any loop (a backward pass, an
    /// optimizer or environment step).
    pub update: bool,
    /// Its body runs a model outside any loop.
    pub forward: bool,
    /// Its body calls, outside any loop, a method or function named like a
    /// model's forward pass that a function of the crate may define (see
    /// [`LoopFacts::forward_named`]).
    pub forward_named: bool,
    /// Its body calls, outside any loop, a bare `step()` that may be the
    /// crate's own (see [`LoopFacts::update_named`]).
    pub update_named: bool,
    /// It hands results on to another thread: sends over a channel or
    /// wakes a queue's waiters.
    pub hands_on: bool,
    /// It sits under a cargo feature the default build leaves off (an
    /// `impl` for another backend): no call of the default build reaches it.
    pub compiled_out: bool,
    /// A framework runs it once per frame: a game or GUI framework's
    /// per-frame method (`update` or `draw` of an `eframe::App` or a
    /// ggez `EventHandler`). The line to point at.
    pub frame: Option<usize>,
}

impl FileFacts {
    /// Puts everything the file holds outside the release hot path, for
    /// `cold` (its module is declared behind a cfg that is off), where
    /// nothing closer already does.
    pub(crate) fn make_cold(&mut self, cold: &Cold) {
        for context in self
            .sites
            .iter_mut()
            .map(|s| &mut s.context)
            .chain(self.calls.iter_mut().map(|c| &mut c.context))
        {
            context.cold.get_or_insert_with(|| cold.clone());
        }
        if matches!(cold, Cold::Feature(_)) {
            for function in &mut self.functions {
                function.compiled_out = true;
            }
        }
    }
}

impl FnFacts {
    /// `Owner::name` or `name`.
    pub fn display_name(&self) -> String {
        match &self.owner {
            Some(owner) => format!("{owner}::{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// A struct definition's fields.
#[derive(Clone, Debug)]
pub struct StructFacts {
    /// The struct's name.
    pub name: String,
    /// Field names (tuple fields as `0`, `1`, ...) and types.
    pub fields: Vec<(String, TyKind)>,
    /// Fields whose type is one of the struct's type parameters (`model: M`,
    /// also behind `Box`, `Option`, `&`), by the parameter's position: an impl
    /// for `Robot<Agent>` knows `self.model` is an `Agent`.
    pub param_fields: Vec<(String, usize)>,
    /// It derives setters named after its fields (`#[derive(Setters)]`,
    /// `#[derive(Builder)]`): `builder.vs(store)` stores into `vs`.
    pub setters: bool,
}

/// The owner under which what the crate sends over channels is recorded,
/// as stores into one field ([`CHANNEL_MESSAGE`]) of a type no crate can
/// name: a value received from a channel is placed by every value sent.
pub const CHANNEL: &str = "<channel>";

/// The field of [`CHANNEL`] that sent values are stored into.
pub const CHANNEL_MESSAGE: &str = "message";

/// The field of [`CHANNEL`] that sent values of no known shape are also
/// stored into: neither a tuple (whose parts are stored by position, see
/// [`channel_part`]) nor a struct or enum value built where it is sent
/// (`Request::new(q)`, `Flag::Stop(rank)`), which no receiver can take
/// apart as a tuple.
pub const CHANNEL_OPEN: &str = "message?";

/// The field of [`CHANNEL`] that part `index` of each tuple sent is stored
/// into: what `let (policy, value) = rx.recv()?` binds `value` to.
pub fn channel_part(index: usize) -> String {
    format!("{CHANNEL_MESSAGE}.{index}")
}

/// A value stored into a struct's field: `S { f: v }`, `self.f = v`.
#[derive(Clone, Debug)]
pub struct FieldStore {
    /// The struct, by name.
    pub owner: String,
    /// The field.
    pub field: String,
    /// Where the stored value lives; `None` when it holds no data.
    pub place: Option<Place>,
    /// The stored value is known to hold no data (`None`, a number, a
    /// string), unlike a value of unknown kind.
    pub empty: bool,
    /// The function that stores it (its parameters place the value).
    pub function: Option<usize>,
    /// Fields of `owner` that lead to the struct stored into, outermost
    /// first (`self.config.device = d` in a builder: `config`), followed
    /// by the crate pass through the fields' declared types.
    pub through: Vec<String>,
    /// The stored value's type where only the crate pass can tell it (a
    /// message sent over a channel that a crate function returned).
    pub ty: Option<TypeRef>,
}

/// A type alias of a type tch converts tensors into
/// (`type AttentionHead = Vec<Vec<f32>>;`), by its name.
#[derive(Clone, Debug)]
pub struct AliasFacts {
    /// The alias.
    pub name: String,
}

/// A trait definition.
#[derive(Clone, Debug)]
pub struct TraitFacts {
    /// The trait's name.
    pub name: String,
    /// Its supertraits, by name (`Scorer` in `trait Policy: Scorer`).
    pub supertraits: Vec<String>,
}

/// A `use` declaration, one imported name each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UseFacts {
    /// Inline `mod` blocks around it within the file.
    pub module: Vec<String>,
    /// The path imported, as written (`crate::a::b`), without the glob.
    pub path: Vec<String>,
    /// The name it is imported as; `*` for a glob import.
    pub alias: String,
}

/// Everything one file contributes.
#[derive(Clone, Debug, Default)]
pub struct FileFacts {
    /// Sync sites, in source order.
    pub sites: Vec<Site>,
    /// Calls that may reach crate-local functions.
    pub calls: Vec<CallSite>,
    /// Loops, by id.
    pub loops: Vec<LoopFacts>,
    /// Functions, by id.
    pub functions: Vec<FnFacts>,
    /// Structs.
    pub structs: Vec<StructFacts>,
    /// Values stored into struct fields.
    pub field_stores: Vec<FieldStore>,
    /// What the file sends over channels, as far as tensors go: `Tensor`,
    /// `Tensors`, or the named struct sent (`WorkItem { logits, .. }`).
    pub sent: Vec<TyKind>,
    /// Functions the file hands a framework to run once per frame, by name
    /// and the line of the registration: a bevy system added outside the
    /// start-up schedules (`add_systems(Update, (act, learn))`), a notan
    /// app's `.update(update)` and `.draw(draw)`.
    pub frame_callbacks: Vec<(String, usize)>,
    /// Constants and statics whose value is a device (`static DEVICE:
    /// Device = Device::Cpu;`), by name, with whether it is the CPU.
    pub device_consts: Vec<(String, bool)>,
    /// `use` declarations.
    pub uses: Vec<UseFacts>,
    /// Traits.
    pub traits: Vec<TraitFacts>,
    /// Aliases of types tch converts tensors into.
    pub aliases: Vec<AliasFacts>,
    /// Other type aliases of a named type, as (alias, the type's last path
    /// segment): `type SBertRT = SBert<RustTokenizers>`.
    pub type_aliases: Vec<(String, String)>,
    /// Allow comments.
    pub(crate) suppressions: Suppressions,
    /// Parts of the file that could not be analysed: (line, message).
    pub incomplete: Vec<(usize, String)>,
    /// The file mentions tch (`Tensor`, `tch::`): a function of it named
    /// `forward` may run a model; one of a file that never does runs none.
    pub mentions_tch: bool,
}
