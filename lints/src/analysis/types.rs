//! Classifying types as written: parameter types, annotations, fields and
//! return types.

use quote::ToTokens;
use syn::{GenericArgument, PathArguments, Type, TypeParamBound};

use super::facts::TyKind;
use crate::rules::host_sync::Target;

/// Classifies a written type; `self_ty` replaces `Self`.
pub(crate) fn classify(ty: &Type, self_ty: Option<&str>) -> TyKind {
    match ty {
        Type::Reference(r) => classify(&r.elem, self_ty),
        Type::Paren(p) => classify(&p.elem, self_ty),
        Type::Group(g) => classify(&g.elem, self_ty),
        Type::Slice(s) => collection(classify(&s.elem, self_ty)),
        Type::Array(a) => collection(classify(&a.elem, self_ty)),
        Type::Tuple(t) if t.elems.is_empty() => TyKind::Other,
        Type::Tuple(t) => TyKind::Tuple(t.elems.iter().map(|e| classify(e, self_ty)).collect()),
        Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return TyKind::Other;
            };
            let name = last.ident.to_string();
            match name.as_str() {
                "Tensor" => TyKind::Tensor,
                "Device" => TyKind::Device,
                "Self" => self_ty.map_or(TyKind::Other, |s| TyKind::Named(s.to_owned())),
                "Vec" | "VecDeque" | "SmallVec" | "ArrayVec" => collection(
                    first_generic(&last.arguments).map_or(TyKind::Other, |t| classify(t, self_ty)),
                ),
                "Option" | "Result" | "Box" | "Rc" | "Arc" | "RefCell" | "Cell" | "Mutex"
                | "RwLock" | "Cow" | "MutexGuard" | "Ref" | "RefMut" | "Fallible" => {
                    first_generic(&last.arguments).map_or(TyKind::Other, |t| classify(t, self_ty))
                }
                _ if is_std_scalar_or_text(&name) => TyKind::Other,
                _ => TyKind::Named(name),
            }
        }
        Type::ImplTrait(t) => first_trait(t.bounds.iter()),
        Type::TraitObject(t) => first_trait(t.bounds.iter()),
        _ => TyKind::Other,
    }
}

fn collection(element: TyKind) -> TyKind {
    if element == TyKind::Tensor {
        TyKind::Tensors
    } else {
        TyKind::Other
    }
}

fn first_generic(arguments: &PathArguments) -> Option<&Type> {
    match arguments {
        PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    }
}

fn first_trait<'a>(mut bounds: impl Iterator<Item = &'a TypeParamBound>) -> TyKind {
    bounds
        .find_map(|b| match b {
            TypeParamBound::Trait(t) => t
                .path
                .segments
                .last()
                .map(|s| TyKind::Named(s.ident.to_string())),
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
        classify(&syn::parse_str(ty).unwrap(), Some("Agent"))
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
            kind("(Tensor, f64)"),
            TyKind::Tuple(vec![TyKind::Tensor, TyKind::Other])
        );
        assert_eq!(kind("Self"), TyKind::Named("Agent".into()));
        assert_eq!(
            kind("&mut nn::Optimizer"),
            TyKind::Named("Optimizer".into())
        );
        assert_eq!(kind("&impl ModuleT"), TyKind::Named("ModuleT".into()));
        assert_eq!(kind("String"), TyKind::Other);
        assert_eq!(kind("Device"), TyKind::Device);
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
