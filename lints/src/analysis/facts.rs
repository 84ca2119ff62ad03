//! Plain data a file's analysis produces. Syntax trees cannot leave the
//! thread that parsed them (their spans index a thread-local source map), so
//! everything the crate-level pass needs is copied out into these types.

use super::values::{Requirement, TypeRef};
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
    /// Index of the `devcheck.toml` pattern, for custom-pattern sites.
    pub pattern: Option<usize>,
    /// Local closures the sync is reached through (`closure `log``).
    pub via: Vec<String>,
}

/// A call that may reach a crate-local function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Callee {
    /// `name(..)` or `module::name(..)`.
    Free(String),
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

/// A call site, for the interprocedural pass.
#[derive(Clone, Debug)]
pub struct CallSite {
    /// What is called.
    pub callee: Callee,
    /// Where to point.
    pub loc: Loc,
    /// Loop and guard context.
    pub context: Context,
}

/// One loop (including iterator-adapter closures such as `for_each`).
#[derive(Clone, Debug, Default)]
pub struct LoopFacts {
    /// The body holds another loop, so this loop's own level is the
    /// once-per-epoch summary.
    pub has_nested_loop: bool,
    /// The enclosing loop.
    pub parent: Option<usize>,
    /// Line of the `for`/`while`/`loop` keyword or the adapter's closure.
    pub line: usize,
}

/// A syntactic type, classified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TyKind {
    /// `Tensor` (also behind `&`, `Option`, `Result`, `Box`, ...).
    Tensor,
    /// `Vec<Tensor>`, `&[Tensor]`, `[Tensor; N]`.
    Tensors,
    /// Another named type, by its last path segment.
    Named(String),
    /// A tuple.
    Tuple(Vec<TyKind>),
    /// `tch::Device`.
    Device,
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
    /// Its name.
    pub name: String,
    /// Whether it takes `self`.
    pub has_receiver: bool,
    /// Its return type.
    pub returns: TyKind,
    /// Where it is defined (the name).
    pub loc: Loc,
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
    /// Allow comments.
    pub(crate) suppressions: Suppressions,
    /// Parts of the file that could not be analysed: (line, message).
    pub incomplete: Vec<(usize, String)>,
}
