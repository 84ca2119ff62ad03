//! Classifying types as written: parameter types, annotations, fields and
//! return types.

use quote::ToTokens;
use syn::{GenericArgument, PathArguments, ReturnType, Type, TypeParamBound};

use super::facts::TyKind;
use crate::rules::Target;

/// Classifies a written type; `self_ty` replaces `Self`, and `generics` maps the enclosing items'
/// type parameters to their first trait bound (`B: Buffer` → `Buffer`), so
/// calls on a generic receiver dispatch to the crate's impls of the trait.
pub(crate) fn classify_in(
    ty: &Type,
    self_ty: Option<&str>,
    generics: &[(String, TyKind)],
) -> TyKind {
    let again = |t: &Type| classify_in(t, self_ty, generics);
    match ty {
        Type::Reference(r) => again(&r.elem),
        Type::Paren(p) => again(&p.elem),
        Type::Group(g) => again(&g.elem),
        Type::Slice(s) => collection(again(&s.elem)),
        Type::Array(a) => collection(again(&a.elem)),
        Type::Tuple(t) if t.elems.is_empty() => TyKind::Other,
        Type::Tuple(t) => TyKind::Tuple(t.elems.iter().map(again).collect()),
        Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return TyKind::Other;
            };
            let name = last.ident.to_string();
            if p.path.segments.len() == 1 {
                if let Some((_, bound)) = generics.iter().find(|(g, _)| *g == name) {
                    return bound.clone();
                }
            }
            match name.as_str() {
                "Tensor" => TyKind::Tensor,
                "Device" => TyKind::Device,
                "Self" => self_ty.map_or(TyKind::Other, |s| TyKind::Named(s.to_owned())),
                "Vec" | "VecDeque" | "SmallVec" | "ArrayVec" | "LinkedList" => {
                    collection(first_generic(&last.arguments).map_or(TyKind::Other, again))
                }
                "Option" | "Result" | "Box" | "Rc" | "Arc" | "RefCell" | "Cell" | "Mutex"
                | "RwLock" | "Cow" | "MutexGuard" | "Ref" | "RefMut" | "Fallible"
                // A bevy system's resources deref to the resource.
                | "Res" | "ResMut" | "NonSend" | "NonSendMut" => {
                    first_generic(&last.arguments).map_or(TyKind::Other, again)
                }
                "HashMap" | "BTreeMap" | "IndexMap" | "FxHashMap" | "AHashMap" => {
                    map(nth_generic(&last.arguments, 1).map_or(TyKind::Other, again))
                }
                _ if is_number(&name) => TyKind::Number,
                _ if is_std_scalar_or_text(&name) => TyKind::Other,
                // `PyResult<T>`, `TchResult<T>`: result aliases.
                _ if name.ends_with("Result") && first_generic(&last.arguments).is_some() => {
                    first_generic(&last.arguments).map_or(TyKind::Other, again)
                }
                _ => TyKind::Named(name),
            }
        }
        Type::ImplTrait(t) => first_trait(t.bounds.iter(), self_ty, generics),
        Type::TraitObject(t) => first_trait(t.bounds.iter(), self_ty, generics),
        Type::BareFn(f) => callable(&f.output, self_ty, generics),
        _ => TyKind::Other,
    }
}

/// What a callable type returns, classified.
fn callable(output: &ReturnType, self_ty: Option<&str>, generics: &[(String, TyKind)]) -> TyKind {
    TyKind::Callable(Box::new(match output {
        ReturnType::Default => TyKind::Other,
        ReturnType::Type(_, ty) => classify_in(ty, self_ty, generics),
    }))
}

/// The type parameters of a generics list with their first trait bound
/// (from the list or its `where` clause), classified: the trait's name, or
/// for `F: Fn(&Tensor) -> Tensor` what calling an `F` returns. Unbounded
/// ones are left out.
pub(crate) fn generic_bounds(generics: &syn::Generics) -> Vec<(String, TyKind)> {
    let mut found: Vec<(String, TyKind)> = Vec::new();
    let mut add =
        |name: String, bounds: &syn::punctuated::Punctuated<TypeParamBound, syn::Token![+]>| {
            if found.iter().any(|(n, _)| *n == name) {
                return;
            }
            let bound = first_trait(bounds.iter(), None, &[]);
            if matches!(bound, TyKind::Named(_) | TyKind::Callable(_)) {
                found.push((name, bound));
            }
        };
    for param in generics.type_params() {
        add(param.ident.to_string(), &param.bounds);
    }
    if let Some(clause) = &generics.where_clause {
        for predicate in &clause.predicates {
            if let syn::WherePredicate::Type(p) = predicate {
                if let Type::Path(tp) = &p.bounded_ty {
                    if let Some(ident) = tp.path.get_ident() {
                        add(ident.to_string(), &p.bounds);
                    }
                }
            }
        }
    }
    found
}

fn collection(element: TyKind) -> TyKind {
    match element {
        TyKind::Tensor => TyKind::Tensors,
        TyKind::Named(_) | TyKind::Tuple(_) | TyKind::Collection(_) => {
            TyKind::Collection(Box::new(element))
        }
        _ => TyKind::Other,
    }
}

/// A map whose values hold tensors or crate types; any other map is just
/// another value.
fn map(value: TyKind) -> TyKind {
    match value {
        TyKind::Number | TyKind::Other | TyKind::Device => TyKind::Other,
        value => TyKind::Map(Box::new(value)),
    }
}

/// The type arguments of a path segment, in order (`K`, `V` in `HashMap<K, V>`).
pub(crate) fn type_arguments(arguments: &PathArguments) -> impl Iterator<Item = &Type> {
    let args = match arguments {
        PathArguments::AngleBracketed(args) => Some(args.args.iter()),
        _ => None,
    };
    args.into_iter().flatten().filter_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    })
}

/// The `n`th type argument of a path segment (`V` in `HashMap<K, V>`).
fn nth_generic(arguments: &PathArguments, n: usize) -> Option<&Type> {
    type_arguments(arguments).nth(n)
}

fn first_generic(arguments: &PathArguments) -> Option<&Type> {
    type_arguments(arguments).next()
}

/// The first trait of a list of bounds, by name; the `Fn` traits by what
/// calling them returns (`Fn(&Tensor) -> Tensor`).
fn first_trait<'a>(
    mut bounds: impl Iterator<Item = &'a TypeParamBound>,
    self_ty: Option<&str>,
    generics: &[(String, TyKind)],
) -> TyKind {
    bounds
        .find_map(|b| match b {
            TypeParamBound::Trait(t) => {
                t.path
                    .segments
                    .last()
                    .map(|s| match (&s.arguments, s.ident.to_string().as_str()) {
                        (PathArguments::Parenthesized(f), "Fn" | "FnMut" | "FnOnce") => {
                            callable(&f.output, self_ty, generics)
                        }
                        (_, name) => TyKind::Named(name.to_owned()),
                    })
            }
            _ => None,
        })
        .unwrap_or(TyKind::Other)
}

fn is_std_scalar_or_text(name: &str) -> bool {
    is_scalar(name)
        || matches!(
            name,
            "String"
                | "str"
                | "char"
                | "usize"
                | "isize"
                | "u16"
                | "u32"
                | "u64"
                | "u128"
                | "i128"
                | "Kind"
                | "HashMap"
                | "BTreeMap"
                | "HashSet"
                | "BTreeSet"
                | "PathBuf"
                | "Path"
                | "Duration"
                | "Instant"
        )
}

/// Rust's numbers and `bool`.
fn is_number(name: &str) -> bool {
    is_scalar(name)
        || matches!(
            name,
            "usize" | "isize" | "u16" | "u32" | "u64" | "u128" | "i128"
        )
}

/// Scalar element types tch converts a tensor into.
pub(crate) fn is_scalar(name: &str) -> bool {
    matches!(
        name,
        "f64" | "f32" | "f16" | "bf16" | "i64" | "i32" | "i16" | "i8" | "u8" | "bool"
    )
}

/// What `Type::try_from(tensor)` would convert into, if `Type` (the last
/// segment of the qualifier) is something tch converts tensors into.
pub(crate) fn conversion_target(type_name: &str) -> Option<Target> {
    if is_scalar(type_name) {
        Some(Target::Scalar)
    } else if matches!(
        type_name,
        "Vec"
            | "ArrayD"
            | "Array"
            | "Array0"
            | "Array1"
            | "Array2"
            | "Array3"
            | "Array4"
            | "Array5"
            | "Array6"
            | "ArrayBase"
    ) {
        Some(Target::Bulk)
    } else {
        None
    }
}

/// What `let x: T = t.try_into()` converts into.
pub(crate) fn annotation_target(ty: &Type) -> Option<Target> {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            conversion_target(&p.path.segments.last()?.ident.to_string())
        }
        _ => None,
    }
}

/// Tokens printed without the spaces `ToTokens` puts between them:
/// `Vec::<f32>` rather than `Vec :: < f32 >`.
pub(crate) fn compact(tokens: &impl ToTokens) -> String {
    tokens
        .to_token_stream()
        .to_string()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(ty: &str) -> TyKind {
        classify_in(&syn::parse_str(ty).unwrap(), Some("Agent"), &[])
    }

    #[test]
    fn types_are_classified_through_wrappers() {
        assert_eq!(kind("&Tensor"), TyKind::Tensor);
        assert_eq!(kind("tch::Tensor"), TyKind::Tensor);
        assert_eq!(kind("anyhow::Result<Tensor>"), TyKind::Tensor);
        assert_eq!(kind("Option<&mut Tensor>"), TyKind::Tensor);
        assert_eq!(kind("&[Tensor]"), TyKind::Tensors);
        assert_eq!(kind("Vec<Tensor>"), TyKind::Tensors);
        assert_eq!(kind("Vec<f32>"), TyKind::Other);
        assert_eq!(
            kind("Vec<T5Block>"),
            TyKind::Collection(Box::new(TyKind::Named("T5Block".into())))
        );
        assert_eq!(
            kind("Vec<(f64, Tensor)>"),
            TyKind::Collection(Box::new(TyKind::Tuple(vec![
                TyKind::Number,
                TyKind::Tensor
            ])))
        );
        assert_eq!(
            kind("(Tensor, f64)"),
            TyKind::Tuple(vec![TyKind::Tensor, TyKind::Number])
        );
        assert_eq!(kind("Self"), TyKind::Named("Agent".into()));
        assert_eq!(
            kind("&mut nn::Optimizer"),
            TyKind::Named("Optimizer".into())
        );
        assert_eq!(kind("&impl ModuleT"), TyKind::Named("ModuleT".into()));
        assert_eq!(kind("String"), TyKind::Other);
        assert_eq!(kind("f64"), TyKind::Number);
        assert_eq!(kind("Vec<f32>"), TyKind::Other);
        assert_eq!(kind("Device"), TyKind::Device);
    }

    #[test]
    fn callables_are_classified_by_what_they_return() {
        let returns_tensor = TyKind::Callable(Box::new(TyKind::Tensor));
        assert_eq!(kind("fn(&Tensor, &Tensor) -> Tensor"), returns_tensor);
        assert_eq!(kind("Box<dyn Fn(&Tensor) -> Tensor>"), returns_tensor);
        assert_eq!(kind("&mut impl FnMut(&Tensor) -> Tensor"), returns_tensor);
        assert_eq!(
            kind("fn(&Tensor) -> f64"),
            TyKind::Callable(Box::new(TyKind::Number))
        );
        let item: syn::ItemStruct =
            syn::parse_str("struct S<F> where F: Fn(&Tensor) -> Tensor { f: F }").unwrap();
        let generics = generic_bounds(&item.generics);
        let ty: Type = syn::parse_str("F").unwrap();
        assert_eq!(classify_in(&ty, None, &generics), returns_tensor);
    }

    #[test]
    fn generic_receivers_take_their_trait_bound() {
        let item: syn::ItemFn =
            syn::parse_str("fn f<B: Buffer, T>(b: &B, t: T) where T: Into<f64> {}").unwrap();
        let generics = generic_bounds(&item.sig.generics);
        assert_eq!(
            generics,
            vec![
                ("B".to_owned(), TyKind::Named("Buffer".into())),
                ("T".to_owned(), TyKind::Named("Into".into()))
            ]
        );
        let ty: Type = syn::parse_str("&mut B").unwrap();
        assert_eq!(
            classify_in(&ty, None, &generics),
            TyKind::Named("Buffer".into())
        );
    }

    #[test]
    fn conversion_targets() {
        assert_eq!(conversion_target("f32"), Some(Target::Scalar));
        assert_eq!(conversion_target("Vec"), Some(Target::Bulk));
        assert_eq!(conversion_target("ArrayD"), Some(Target::Bulk));
        assert_eq!(conversion_target("usize"), None);
        assert_eq!(conversion_target("String"), None);
    }
}
