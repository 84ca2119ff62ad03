//! Models whose `VarStore` is handed over through derived setters
//! (`#[derive(Setters)]`, `#[derive(TypedBuilder)]`): where it lives is
//! where the binaries' setter calls say, and a tuple struct built from the
//! model's output (`Output(t)`) holds data that lives there too.

pub mod agent;
