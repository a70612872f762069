//! `#[derive(ToolArgs)]`: a [`SchemaSpec`] from a Rust type, for the
//! `dsh-tools` crate (use it through `dsh_tools::ToolArgs`).
//!
//! On a struct with named fields it implements `dsh_tools::ToolArgs` (the
//! spec) and `dsh_tools::ToolArgsField` (an object property with those
//! properties, so the struct nests). On a unit-only enum it implements
//! `ToolArgsField` as a string enum of the serde names; on an enum with
//! data, as a `one_of` with one branch per variant in serde's
//! representation: externally tagged (`"Unit"`, `{"Newtype": value}`,
//! `{"Struct": {fields}}`, the wrapper closed to other keys), internally
//! tagged (`tag = "t"`: `{"t": "Name", fields…}`; a newtype variant holds a
//! struct whose fields join the tag) or adjacently tagged (`tag` +
//! `content`: `{"t": "Name", "c": value}`). Branches are told apart by a
//! constant, so a value matches exactly one.
//!
//! The derive reads serde's attributes so that the spec describes exactly
//! what `#[derive(Deserialize)]` accepts: container `rename_all`,
//! `default`, `deny_unknown_fields` (the object's `additional_properties:
//! false` when nested; at the top level the typed call path drops
//! undeclared keys before deserializing, as it always ignores them),
//! `tag`, `content`; field `rename`, `default`, `skip` /
//! `skip_deserializing`, `flatten`; variant `rename`, `rename_all` and
//! `skip`. A field is required unless it is an `Option<…>`, has a default,
//! or the container has one. Doc comments become descriptions. Bounds the
//! Rust type cannot say come from `#[tool(min_length = 1, max_length = 80,
//! min_items = 1, max_items = 10)]` on a field (lengths for strings, item
//! counts for arrays). Attributes that would make the spec lie (`alias` on
//! fields, `deserialize_with`, `with`, `untagged`, `transparent`, `from`,
//! `try_from`) and unsupported shapes (tuple/unit structs, tuple variants,
//! generics, recursive types) are compile errors saying what to do
//! instead.
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
#[proc_macro_derive(ToolArgs, attributes(serde, tool))]
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
            Fields::Named(_) if container.tag.is_some() || container.content.is_some() => {
                Err(syn::Error::new_spanned(
                    &input.ident,
                    "#[serde(tag/content)] describes an enum's representation; a struct has none",
                ))
            }
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

/// The JSON name of a field: its `rename`, else the container's
/// `rename_all` rule applied, else the field's own name.
fn json_name(attrs: &FieldAttrs, rename: Option<RenameRule>, ident: &syn::Ident) -> String {
    match &attrs.rename {
        Some(n) => n.clone(),
        None => rename
            .map(|r| r.apply_to_field(&ident.unraw().to_string()))
            .unwrap_or_else(|| ident.unraw().to_string()),
    }
}

/// `#[tool(together("a", "b"))]` on a struct: the groups, each checked
/// against the struct's JSON field names (unless a flattened field may
/// bring the name).
fn together_groups<'a>(
    input: &DeriveInput,
    rename: Option<RenameRule>,
    fields: impl Iterator<Item = &'a syn::Field> + Clone,
) -> syn::Result<Vec<TokenStream2>> {
    let mut names = Vec::new();
    let mut flattened = false;
    for field in fields {
        let attrs = FieldAttrs::parse(&field.attrs)?;
        if attrs.skip {
            continue;
        }
        flattened |= attrs.flatten;
        if let Some(ident) = &field.ident {
            names.push(json_name(&attrs, rename, ident));
        }
    }
    let mut groups = Vec::new();
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("tool")) {
        attr.parse_nested_meta(|meta| {
            if !meta.path.is_ident("together") {
                return Err(meta.error(
                    "unknown #[tool(…)] key on a struct; supported: together(\"a\", \"b\", …)",
                ));
            }
            let content;
            syn::parenthesized!(content in meta.input);
            let lits = content.parse_terminated(|p| p.parse::<LitStr>(), syn::Token![,])?;
            if lits.len() < 2 {
                return Err(meta.error("together(…) needs at least two property names"));
            }
            for lit in &lits {
                if !flattened && !names.contains(&lit.value()) {
                    return Err(syn::Error::new_spanned(
                        lit,
                        format!(
                            "together(…) names {:?}, which is not a property; properties: {}",
                            lit.value(),
                            names.join(", ")
                        ),
                    ));
                }
            }
            let values: Vec<String> = lits.iter().map(LitStr::value).collect();
            groups.push(quote! { spec.require_together(&[#(#values),*]); });
            Ok(())
        })?;
    }
    Ok(groups)
}

fn expand_struct<'a>(
    input: &DeriveInput,
    container: &ContainerAttrs,
    fields: impl Iterator<Item = &'a syn::Field> + Clone,
) -> syn::Result<TokenStream2> {
    let ident = &input.ident;
    let together = together_groups(input, container.rename_all, fields.clone())?;
    let stmts = field_stmts(ident, container.rename_all, container.default, fields)?;
    let describe = doc_string(&input.attrs).map(|d| {
        quote! { prop.description = ::core::option::Option::Some(::std::string::String::from(#d)); }
    });
    let closed = container.deny_unknown_fields.then(|| {
        quote! { prop.additional_properties = ::core::option::Option::Some(false); }
    });
    Ok(quote! {
        impl ::dsh_tools::ToolArgs for #ident {
            fn schema_spec() -> ::dsh_tools::SchemaSpec {
                let mut spec = ::dsh_tools::SchemaSpec::new();
                #(#stmts)*
                #(#together)*
                spec
            }
        }

        impl ::dsh_tools::ToolArgsField for #ident {
            fn schema_prop() -> ::dsh_tools::SchemaProp {
                #[allow(unused_mut)]
                let mut prop = ::dsh_tools::SchemaProp::object_with(
                    <Self as ::dsh_tools::ToolArgs>::schema_spec(),
                );
                #closed
                #describe
                prop
            }
        }
    })
}

/// Statements that insert the properties of `fields` into a
/// `dsh_tools::SchemaSpec` named `spec` (`owner` is the type, to refuse
/// recursion; `rename` the rule for field names).
fn field_stmts<'a>(
    owner: &syn::Ident,
    rename: Option<RenameRule>,
    all_default: bool,
    fields: impl Iterator<Item = &'a syn::Field>,
) -> syn::Result<Vec<TokenStream2>> {
    let mut stmts = Vec::new();
    for field in fields {
        let attrs = FieldAttrs::parse(&field.attrs)?;
        if attrs.skip {
            continue;
        }
        let Some(field_ident) = &field.ident else {
            continue;
        };
        if mentions(&field.ty, owner) {
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
        let name = json_name(&attrs, rename, field_ident);
        let (ty, optional) = match option_inner(&field.ty) {
            Some(inner) => (inner, true),
            None => (&field.ty, false),
        };
        let required = !(optional || attrs.default || all_default);
        let prop = quote_spanned! {ty.span()=>
            <#ty as ::dsh_tools::ToolArgsField>::schema_prop()
        };
        let describe = doc_string(&field.attrs).map(|d| {
            quote! { prop.description = ::core::option::Option::Some(::std::string::String::from(#d)); }
        });
        let bounds = attrs.bounds.iter().map(|(key, n)| {
            let key = syn::Ident::new(key, Span::call_site());
            quote! { prop.#key = ::core::option::Option::Some(#n); }
        });
        let range = attrs.range.iter().map(|(method, x)| {
            let method = syn::Ident::new(method, Span::call_site());
            quote! { prop = prop.#method(#x); }
        });
        stmts.push(quote! {
            {
                let mut prop: ::dsh_tools::SchemaProp = #prop;
                prop.required = #required;
                #(#bounds)*
                #(#range)*
                #describe
                spec.insert(#name, prop);
            }
        });
    }
    Ok(stmts)
}

fn expand_enum<'a>(
    input: &DeriveInput,
    container: &ContainerAttrs,
    variants: impl Iterator<Item = &'a syn::Variant>,
) -> syn::Result<TokenStream2> {
    let ident = &input.ident;
    let variants: Vec<&syn::Variant> = variants.collect();
    let describe = doc_string(&input.attrs).map(|d| {
        quote! { prop.description = ::core::option::Option::Some(::std::string::String::from(#d)); }
    });
    let unit_only = variants.iter().all(|v| matches!(v.fields, Fields::Unit));
    if unit_only && container.tag.is_none() {
        let mut names = Vec::new();
        for variant in &variants {
            let attrs = VariantAttrs::parse(&variant.attrs)?;
            if !attrs.skip {
                names.push(variant_name(container, variant, &attrs));
            }
        }
        if names.is_empty() {
            return Err(syn::Error::new_spanned(
                ident,
                "ToolArgs needs at least one (non-skipped) variant: an empty string enum accepts nothing",
            ));
        }
        return Ok(quote! {
            impl ::dsh_tools::ToolArgsField for #ident {
                fn schema_prop() -> ::dsh_tools::SchemaProp {
                    #[allow(unused_mut)]
                    let mut prop = ::dsh_tools::SchemaProp::string_enum([#(#names),*]);
                    #describe
                    prop
                }
            }
        });
    }
    if container.content.is_some() && container.tag.is_none() {
        return Err(syn::Error::new_spanned(
            ident,
            "#[serde(content = \"…\")] needs #[serde(tag = \"…\")] too (adjacent tagging)",
        ));
    }
    let mut branches = Vec::new();
    for variant in &variants {
        let attrs = VariantAttrs::parse(&variant.attrs)?;
        if attrs.skip {
            continue;
        }
        let name = variant_name(container, variant, &attrs);
        branches.push(variant_branch(ident, container, variant, &attrs, &name)?);
    }
    if branches.is_empty() {
        return Err(syn::Error::new_spanned(
            ident,
            "ToolArgs needs at least one (non-skipped) variant: an empty enum accepts nothing",
        ));
    }
    Ok(quote! {
        impl ::dsh_tools::ToolArgsField for #ident {
            fn schema_prop() -> ::dsh_tools::SchemaProp {
                #[allow(unused_mut)]
                let mut prop = ::dsh_tools::SchemaProp::one_of([#(#branches),*]);
                #describe
                prop
            }
        }
    })
}

/// The serde name of a variant.
fn variant_name(
    container: &ContainerAttrs,
    variant: &syn::Variant,
    attrs: &VariantAttrs,
) -> String {
    match &attrs.rename {
        Some(n) => n.clone(),
        None => container
            .rename_all
            .map(|r| r.apply_to_variant(&variant.ident.unraw().to_string()))
            .unwrap_or_else(|| variant.ident.unraw().to_string()),
    }
}

/// The `one_of` branch of one variant, as an expression of type
/// `dsh_tools::SchemaProp`, in the container's representation.
fn variant_branch(
    owner: &syn::Ident,
    container: &ContainerAttrs,
    variant: &syn::Variant,
    attrs: &VariantAttrs,
    name: &str,
) -> syn::Result<TokenStream2> {
    let constant = quote! {
        ::dsh_tools::SchemaProp::string_const(#name)
    };
    // The variant's own value: its fields as an object, or the newtype's
    // schema; `None` for a unit variant.
    enum Shape {
        Unit,
        Newtype(Box<Type>),
        Struct(Vec<TokenStream2>),
    }
    let shape = match &variant.fields {
        Fields::Unit => Shape::Unit,
        Fields::Unnamed(f) if f.unnamed.len() == 1 => {
            let ty = f.unnamed[0].ty.clone();
            if mentions(&ty, owner) {
                return Err(syn::Error::new_spanned(
                    &ty,
                    "recursive ToolArgs types are not supported: the schema would be infinite",
                ));
            }
            Shape::Newtype(Box::new(ty))
        }
        Fields::Unnamed(f) => {
            return Err(syn::Error::new_spanned(
                f,
                "ToolArgs does not support tuple variants (they are JSON arrays of mixed types); use a struct variant with named fields",
            ))
        }
        Fields::Named(f) => Shape::Struct(field_stmts(
            owner,
            attrs.rename_all,
            false,
            f.named.iter(),
        )?),
    };
    let closed = container.deny_unknown_fields.then(|| {
        quote! { prop.additional_properties = ::core::option::Option::Some(false); }
    });
    let object = |stmts: &[TokenStream2], close: bool| {
        let close = close.then(|| {
            quote! { prop.additional_properties = ::core::option::Option::Some(false); }
        });
        quote! {{
            let mut spec = ::dsh_tools::SchemaSpec::new();
            #(#stmts)*
            #[allow(unused_mut)]
            let mut prop = ::dsh_tools::SchemaProp::object_with(spec);
            #close
            prop
        }}
    };
    let value_prop = |shape: &Shape| -> Option<TokenStream2> {
        match shape {
            Shape::Unit => None,
            Shape::Newtype(ty) => Some(quote_spanned! {ty.span()=>
                <#ty as ::dsh_tools::ToolArgsField>::schema_prop()
            }),
            Shape::Struct(stmts) => Some(object(stmts, container.deny_unknown_fields)),
        }
    };
    Ok(match (&container.tag, &container.content) {
        (None, _) => match value_prop(&shape) {
            None => constant,
            Some(value) => object(
                &[quote! {
                    {
                        let mut prop: ::dsh_tools::SchemaProp = #value;
                        prop.required = true;
                        spec.insert(#name, prop);
                    }
                }],
                true,
            ),
        },
        (Some(tag), None) => {
            let tag_stmt = quote! {
                spec.insert(#tag, { let mut c = #constant; c.required = true; c });
            };
            let rest = match &shape {
                Shape::Unit => quote! {},
                Shape::Newtype(ty) => quote_spanned! {ty.span()=>
                    spec.extend(<#ty as ::dsh_tools::ToolArgs>::schema_spec());
                },
                Shape::Struct(stmts) => quote! { #(#stmts)* },
            };
            quote! {{
                let mut spec = ::dsh_tools::SchemaSpec::new();
                #tag_stmt
                #rest
                #[allow(unused_mut)]
                let mut prop = ::dsh_tools::SchemaProp::object_with(spec);
                #closed
                prop
            }}
        }
        (Some(tag), Some(content)) => {
            let content_stmt = match value_prop(&shape) {
                Some(value) => quote! {
                    {
                        let mut prop: ::dsh_tools::SchemaProp = #value;
                        prop.required = true;
                        spec.insert(#content, prop);
                    }
                },
                // serde reads a unit variant's content only as absent or
                // null: any other value there is an error.
                None => quote! {
                    spec.insert(#content, ::dsh_tools::SchemaProp::null());
                },
            };
            quote! {{
                let mut spec = ::dsh_tools::SchemaSpec::new();
                spec.insert(#tag, { let mut c = #constant; c.required = true; c });
                #content_stmt
                #[allow(unused_mut)]
                let mut prop = ::dsh_tools::SchemaProp::object_with(spec);
                #closed
                prop
            }}
        }
    })
}

/// The value of a number literal, possibly negated (`1`, `-2.5`).
fn literal_f64(expr: &Expr) -> Option<f64> {
    match expr {
        Expr::Lit(lit) => match &lit.lit {
            Lit::Int(i) => i.base10_parse::<f64>().ok(),
            Lit::Float(f) => f.base10_parse::<f64>().ok(),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => literal_f64(&u.expr).map(|x| -x),
        _ => None,
    }
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
    deny_unknown_fields: bool,
    tag: Option<String>,
    content: Option<String>,
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
                    "deny_unknown_fields" => {
                        out.deny_unknown_fields = true;
                        Ok(())
                    }
                    "tag" => {
                        let lit: LitStr = meta.value()?.parse()?;
                        out.tag = Some(lit.value());
                        Ok(())
                    }
                    "content" => {
                        let lit: LitStr = meta.value()?.parse()?;
                        out.content = Some(lit.value());
                        Ok(())
                    }
                    "untagged" => Err(meta.error(
                        "ToolArgs does not support #[serde(untagged)]: an untagged value has no constant that tells the variants apart, so the model could not be told which one it sent; use the default (external) tagging or #[serde(tag = \"…\")]",
                    )),
                    "rename_all_fields" => Err(meta.error(
                        "ToolArgs does not support #[serde(rename_all_fields)]; put #[serde(rename_all = \"…\")] on each struct variant",
                    )),
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
    /// `#[tool(min_length = 1, …)]`: (SchemaProp field, value).
    bounds: Vec<(&'static str, u64)>,
    /// `#[tool(minimum = 1)]`, `#[tool(maximum = 10.5)]`.
    range: Vec<(&'static str, f64)>,
}

impl FieldAttrs {
    fn parse(attrs: &[Attribute]) -> syn::Result<Self> {
        let mut out = FieldAttrs::default();
        for attr in attrs.iter().filter(|a| a.path().is_ident("tool")) {
            attr.parse_nested_meta(|meta| {
                let key = path_name(&meta);
                let method = match key.as_str() {
                    "minimum" => Some("at_least"),
                    "maximum" => Some("at_most"),
                    "exclusive_minimum" => Some("above"),
                    "exclusive_maximum" => Some("below"),
                    _ => None,
                };
                if let Some(method) = method {
                    let expr: Expr = meta.value()?.parse()?;
                    let value = literal_f64(&expr).ok_or_else(|| {
                        syn::Error::new_spanned(&expr, "expected a number literal")
                    })?;
                    out.range.push((method, value));
                    return Ok(());
                }
                let field = match key.as_str() {
                    "min_length" => "min_length",
                    "max_length" => "max_length",
                    "min_items" => "min_items",
                    "max_items" => "max_items",
                    _ => {
                        return Err(meta.error(
                            "unknown #[tool(…)] key; supported: min_length, max_length (strings, in characters), min_items, max_items (arrays), minimum, maximum, exclusive_minimum, exclusive_maximum (numbers)",
                        ))
                    }
                };
                let lit: syn::LitInt = meta.value()?.parse()?;
                out.bounds.push((field, lit.base10_parse::<u64>()?));
                Ok(())
            })?;
        }
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
    rename_all: Option<RenameRule>,
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
                    "rename_all" => {
                        if let Some(rule) = deserialize_name(&meta)? {
                            out.rename_all = Some(RenameRule::parse(&rule)?);
                        }
                        Ok(())
                    }
                    "skip" | "skip_deserializing" => {
                        out.skip = true;
                        Ok(())
                    }
                    "deserialize_with" | "with" | "alias" | "other" | "untagged" => Err(meta
                        .error(format!(
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
