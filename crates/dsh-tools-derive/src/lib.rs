//! `#[derive(ToolArgs)]`: a [`SchemaSpec`] from a Rust type, for the
//! `dsh-tools` crate (use it through `dsh_tools::ToolArgs`).
//!
//! On a struct with named fields it implements `dsh_tools::ToolArgs` (the
//! spec) and `dsh_tools::ToolArgsField` (an object property with those
//! properties, so the struct nests). On a unit-only enum it implements
//! `ToolArgsField` as a string enum of the serde names.
//!
//! The derive reads serde's attributes so that the spec describes exactly
//! what `#[derive(Deserialize)]` accepts: container `rename_all` and
//! `default`; field `rename`, `default`, `skip` / `skip_deserializing`,
//! `flatten`; variant `rename` and `skip`. A field is required unless it is
//! an `Option<…>`, has a default, or the container has one. Doc comments
//! become descriptions. Attributes that would make the spec lie
//! (`deny_unknown_fields`, `alias` on fields, `deserialize_with`, `with`,
//! `tag`, `untagged`, `transparent`, `from`, `try_from`) and unsupported
//! shapes (tuple/unit structs, generics, data-carrying enums, recursive
//! types) are compile errors saying what to do instead.
//!
//! [`SchemaSpec`]: https://docs.rs/dsh-tools

#![deny(missing_docs)]

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{parse_macro_input, Attribute, Data, DeriveInput, Expr, Fields, Lit, LitStr, Type};

/// Derives `dsh_tools::ToolArgs` (structs) and `dsh_tools::ToolArgsField`
/// (structs and unit-only enums). See the crate documentation.
#[proc_macro_derive(ToolArgs, attributes(serde))]
pub fn derive_tool_args(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn expand(input: &DeriveInput) -> syn::Result<TokenStream2> {
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "ToolArgs cannot be derived for generic types: the schema the model sees must be one fixed shape; use a concrete type",
        ));
    }
    let container = ContainerAttrs::parse(&input.attrs)?;
    match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(fields) => expand_struct(input, &container, fields.named.iter()),
            _ => Err(syn::Error::new_spanned(
                &input.ident,
                "ToolArgs needs a struct with named fields: tool arguments are a JSON object, so tuple and unit structs have no schema",
            )),
        },
        Data::Enum(data) => expand_enum(input, &container, data.variants.iter()),
        Data::Union(_) => Err(syn::Error::new_spanned(
            &input.ident,
            "ToolArgs cannot be derived for unions",
        )),
    }
}

fn expand_struct<'a>(
    input: &DeriveInput,
    container: &ContainerAttrs,
    fields: impl Iterator<Item = &'a syn::Field>,
) -> syn::Result<TokenStream2> {
    let ident = &input.ident;
    let mut stmts = Vec::new();
    for field in fields {
        let attrs = FieldAttrs::parse(&field.attrs)?;
        if attrs.skip {
            continue;
        }
        let Some(field_ident) = &field.ident else {
            continue;
        };
        if mentions(&field.ty, ident) {
            return Err(syn::Error::new_spanned(
                &field.ty,
                "recursive ToolArgs types are not supported: the schema would be infinite; give the nested level its own type",
            ));
        }
        if attrs.flatten {
            if attrs.default || option_inner(&field.ty).is_some() {
                return Err(syn::Error::new_spanned(
                    &field.ty,
                    "#[serde(flatten)] is supported only on a plain struct field (not Option, not with default)",
                ));
            }
            let ty = &field.ty;
            stmts.push(quote_spanned! {ty.span()=>
                spec.extend(<#ty as ::dsh_tools::ToolArgs>::schema_spec());
            });
            continue;
        }
        let name = match &attrs.rename {
            Some(n) => n.clone(),
            None => container
                .rename_all
                .map(|r| r.apply_to_field(&field_ident.unraw().to_string()))
                .unwrap_or_else(|| field_ident.unraw().to_string()),
        };
        let (ty, optional) = match option_inner(&field.ty) {
            Some(inner) => (inner, true),
            None => (&field.ty, false),
        };
        let required = !(optional || attrs.default || container.default);
        let prop = quote_spanned! {ty.span()=>
            <#ty as ::dsh_tools::ToolArgsField>::schema_prop()
        };
        let describe = doc_string(&field.attrs).map(|d| {
            quote! { prop.description = ::core::option::Option::Some(::std::string::String::from(#d)); }
        });
        stmts.push(quote! {
            {
                let mut prop: ::dsh_tools::SchemaProp = #prop;
                prop.required = #required;
                #describe
                spec.insert(#name, prop);
            }
        });
    }
    let describe = doc_string(&input.attrs).map(|d| {
        quote! { prop.description = ::core::option::Option::Some(::std::string::String::from(#d)); }
    });
    Ok(quote! {
        impl ::dsh_tools::ToolArgs for #ident {
            fn schema_spec() -> ::dsh_tools::SchemaSpec {
                let mut spec = ::dsh_tools::SchemaSpec::new();
                #(#stmts)*
                spec
            }
        }

        impl ::dsh_tools::ToolArgsField for #ident {
            fn schema_prop() -> ::dsh_tools::SchemaProp {
                #[allow(unused_mut)]
                let mut prop = ::dsh_tools::SchemaProp::object_with(
                    <Self as ::dsh_tools::ToolArgs>::schema_spec(),
                );
                #describe
                prop
            }
        }
    })
}

fn expand_enum<'a>(
    input: &DeriveInput,
    container: &ContainerAttrs,
    variants: impl Iterator<Item = &'a syn::Variant>,
) -> syn::Result<TokenStream2> {
    let ident = &input.ident;
    let mut names = Vec::new();
    for variant in variants {
        if !matches!(variant.fields, Fields::Unit) {
            return Err(syn::Error::new_spanned(
                &variant.fields,
                "ToolArgs supports only unit-only enums (they become string enums); move the data into struct fields, or use a separate optional field per case",
            ));
        }
        let attrs = VariantAttrs::parse(&variant.attrs)?;
        if attrs.skip {
            continue;
        }
        let name = match attrs.rename {
            Some(n) => n,
            None => container
                .rename_all
                .map(|r| r.apply_to_variant(&variant.ident.unraw().to_string()))
                .unwrap_or_else(|| variant.ident.unraw().to_string()),
        };
        names.push(name);
    }
    if names.is_empty() {
        return Err(syn::Error::new_spanned(
            ident,
            "ToolArgs needs at least one (non-skipped) variant: an empty string enum accepts nothing",
        ));
    }
    let describe = doc_string(&input.attrs).map(|d| {
        quote! { prop.description = ::core::option::Option::Some(::std::string::String::from(#d)); }
    });
    Ok(quote! {
        impl ::dsh_tools::ToolArgsField for #ident {
            fn schema_prop() -> ::dsh_tools::SchemaProp {
                #[allow(unused_mut)]
                let mut prop = ::dsh_tools::SchemaProp::string_enum([#(#names),*]);
                #describe
                prop
            }
        }
    })
}

/// `T` when `ty` is `Option<T>` (last path segment `Option`, one type
/// argument: the same syntactic test serde uses for "missing means None").
fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    if path.qself.is_some() {
        return None;
    }
    let seg = path.path.segments.last()?;
    if seg.ident != "Option" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    if args.args.len() != 1 {
        return None;
    }
    match args.args.first()? {
        syn::GenericArgument::Type(t) => Some(t),
        _ => None,
    }
}

/// Whether the type's tokens mention `ident` or `Self`.
fn mentions(ty: &Type, ident: &syn::Ident) -> bool {
    fn scan(tokens: TokenStream2, ident: &syn::Ident) -> bool {
        tokens.into_iter().any(|tt| match tt {
            TokenTree::Ident(i) => i == *ident || i == "Self",
            TokenTree::Group(g) => scan(g.stream(), ident),
            _ => false,
        })
    }
    scan(ty.to_token_stream(), ident)
}

/// The doc comment: lines with one leading space stripped, joined by `\n`,
/// trimmed; `None` when empty.
fn doc_string(attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &attr.meta {
            if let Expr::Lit(lit) = &nv.value {
                if let Lit::Str(s) = &lit.lit {
                    let line = s.value();
                    lines.push(
                        line.strip_prefix(' ')
                            .unwrap_or(&line)
                            .trim_end()
                            .to_string(),
                    );
                }
            }
        }
    }
    let text = lines.join("\n").trim().to_string();
    (!text.is_empty()).then_some(text)
}

#[derive(Default)]
struct ContainerAttrs {
    rename_all: Option<RenameRule>,
    default: bool,
}

impl ContainerAttrs {
    fn parse(attrs: &[Attribute]) -> syn::Result<Self> {
        let mut out = ContainerAttrs::default();
        for attr in serde_attrs(attrs) {
            attr.parse_nested_meta(|meta| {
                let key = path_name(&meta);
                match key.as_str() {
                    "rename_all" => {
                        if let Some(rule) = deserialize_name(&meta)? {
                            out.rename_all = Some(RenameRule::parse(&rule)?);
                        }
                        Ok(())
                    }
                    "default" => {
                        out.default = true;
                        skip_value(&meta)
                    }
                    "deny_unknown_fields" => Err(meta.error(
                        "ToolArgs does not support #[serde(deny_unknown_fields)]: extra keys are allowed at the model boundary (validation ignores them, so deserialization must too); remove the attribute",
                    )),
                    "tag" | "content" | "untagged" => Err(meta.error(format!(
                        "ToolArgs does not support #[serde({key})]: tagged representations have no schema here; use a plain struct or a unit-only enum",
                    ))),
                    "transparent" | "from" | "try_from" | "remote" => Err(meta.error(format!(
                        "ToolArgs does not support #[serde({key})]: the schema is derived from the fields, which this attribute bypasses",
                    ))),
                    _ => skip_value(&meta),
                }
            })?;
        }
        Ok(out)
    }
}

#[derive(Default)]
struct FieldAttrs {
    rename: Option<String>,
    default: bool,
    skip: bool,
    flatten: bool,
}

impl FieldAttrs {
    fn parse(attrs: &[Attribute]) -> syn::Result<Self> {
        let mut out = FieldAttrs::default();
        for attr in serde_attrs(attrs) {
            attr.parse_nested_meta(|meta| {
                let key = path_name(&meta);
                match key.as_str() {
                    "rename" => {
                        if let Some(name) = deserialize_name(&meta)? {
                            out.rename = Some(name);
                        }
                        Ok(())
                    }
                    "default" => {
                        out.default = true;
                        skip_value(&meta)
                    }
                    "skip" | "skip_deserializing" => {
                        out.skip = true;
                        Ok(())
                    }
                    "flatten" => {
                        out.flatten = true;
                        Ok(())
                    }
                    "alias" => Err(meta.error(
                        "ToolArgs does not support #[serde(alias)] on fields: the model is shown one name per parameter, and sending both names would pass validation but fail deserialization; use rename",
                    )),
                    "deserialize_with" | "with" => Err(meta.error(format!(
                        "ToolArgs does not support #[serde({key})]: the schema is derived from the field type, which this attribute bypasses; give the field a type that deserializes as it should",
                    ))),
                    _ => skip_value(&meta),
                }
            })?;
        }
        Ok(out)
    }
}

#[derive(Default)]
struct VariantAttrs {
    rename: Option<String>,
    skip: bool,
}

impl VariantAttrs {
    fn parse(attrs: &[Attribute]) -> syn::Result<Self> {
        let mut out = VariantAttrs::default();
        for attr in serde_attrs(attrs) {
            attr.parse_nested_meta(|meta| {
                let key = path_name(&meta);
                match key.as_str() {
                    "rename" => {
                        if let Some(name) = deserialize_name(&meta)? {
                            out.rename = Some(name);
                        }
                        Ok(())
                    }
                    "skip" | "skip_deserializing" => {
                        out.skip = true;
                        Ok(())
                    }
                    "deserialize_with" | "with" => Err(meta.error(format!(
                        "ToolArgs does not support #[serde({key})] on variants",
                    ))),
                    _ => skip_value(&meta),
                }
            })?;
        }
        Ok(out)
    }
}

fn serde_attrs(attrs: &[Attribute]) -> impl Iterator<Item = &Attribute> {
    attrs.iter().filter(|a| a.path().is_ident("serde"))
}

fn path_name(meta: &ParseNestedMeta<'_>) -> String {
    meta.path
        .get_ident()
        .map(|i| i.unraw().to_string())
        .unwrap_or_default()
}

/// The name from `key = "x"` or `key(deserialize = "x", serialize = "y")`;
/// `None` when only `serialize` is given.
fn deserialize_name(meta: &ParseNestedMeta<'_>) -> syn::Result<Option<String>> {
    if meta.input.peek(syn::Token![=]) {
        let lit: LitStr = meta.value()?.parse()?;
        return Ok(Some(lit.value()));
    }
    let mut found = None;
    meta.parse_nested_meta(|inner| {
        let lit: LitStr = inner.value()?.parse()?;
        if inner.path.is_ident("deserialize") {
            found = Some(lit.value());
        }
        Ok(())
    })?;
    Ok(found)
}

/// Consumes an attribute's `= value` or `(…)` so that parsing continues.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(skip_value_owned)?;
    }
    Ok(())
}

fn skip_value_owned(meta: ParseNestedMeta<'_>) -> syn::Result<()> {
    skip_value(&meta)
}

/// serde's `rename_all` rules, applied exactly as serde applies them.
#[derive(Clone, Copy)]
enum RenameRule {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

impl RenameRule {
    fn parse(lit: &str) -> syn::Result<Self> {
        Ok(match lit {
            "lowercase" => RenameRule::Lower,
            "UPPERCASE" => RenameRule::Upper,
            "PascalCase" => RenameRule::Pascal,
            "camelCase" => RenameRule::Camel,
            "snake_case" => RenameRule::Snake,
            "SCREAMING_SNAKE_CASE" => RenameRule::ScreamingSnake,
            "kebab-case" => RenameRule::Kebab,
            "SCREAMING-KEBAB-CASE" => RenameRule::ScreamingKebab,
            other => {
                return Err(syn::Error::new(
                    Span::call_site(),
                    format!("unknown rename_all rule \"{other}\""),
                ))
            }
        })
    }

    /// A snake_case field name under the rule.
    fn apply_to_field(self, field: &str) -> String {
        match self {
            RenameRule::Lower | RenameRule::Snake => field.to_string(),
            RenameRule::Upper | RenameRule::ScreamingSnake => field.to_ascii_uppercase(),
            RenameRule::Pascal => {
                let mut out = String::new();
                let mut capitalize = true;
                for ch in field.chars() {
                    if ch == '_' {
                        capitalize = true;
                    } else if capitalize {
                        out.push(ch.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        out.push(ch);
                    }
                }
                out
            }
            RenameRule::Camel => {
                let pascal = RenameRule::Pascal.apply_to_field(field);
                let mut chars = pascal.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
                    None => pascal,
                }
            }
            RenameRule::Kebab => field.replace('_', "-"),
            RenameRule::ScreamingKebab => field.to_ascii_uppercase().replace('_', "-"),
        }
    }

    /// A PascalCase variant name under the rule.
    fn apply_to_variant(self, variant: &str) -> String {
        match self {
            RenameRule::Pascal => variant.to_string(),
            RenameRule::Lower => variant.to_ascii_lowercase(),
            RenameRule::Upper => variant.to_ascii_uppercase(),
            RenameRule::Camel => {
                let mut chars = variant.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
                    None => String::new(),
                }
            }
            RenameRule::Snake => {
                let mut out = String::new();
                for (i, ch) in variant.char_indices() {
                    if i > 0 && ch.is_uppercase() {
                        out.push('_');
                    }
                    out.push(ch.to_ascii_lowercase());
                }
                out
            }
            RenameRule::ScreamingSnake => RenameRule::Snake
                .apply_to_variant(variant)
                .to_ascii_uppercase(),
            RenameRule::Kebab => RenameRule::Snake
                .apply_to_variant(variant)
                .replace('_', "-"),
            RenameRule::ScreamingKebab => RenameRule::ScreamingSnake
                .apply_to_variant(variant)
                .replace('_', "-"),
        }
    }
}
