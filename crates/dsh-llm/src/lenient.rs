//! Lenient, borrowing field types for deserializing provider wire chunks.
//!
//! Every type here accepts any JSON value and keeps it only when it has the
//! expected type: a non-string where a string is expected reads as absent, a
//! non-object as absent, a non-array as empty. So a wire struct built from
//! them (with `#[serde(default)]` on every field) cannot fail on any
//! well-formed JSON, and nothing a server sends can make translation panic.
//! Only text that is not JSON at all fails, in `serde_json` itself.
//!
//! Strings borrow from the input when they hold no escapes
//! ([`LStr`] is a `Cow`), which is what keeps the SSE translators
//! allocation-light.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// Visitor methods mapping every scalar JSON type to `$ret`.
macro_rules! scalars_as {
    ($ret:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($ret)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($ret)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($ret)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($ret)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($ret)
        }
    };
}

/// Visitor method consuming an array and returning `$ret`.
macro_rules! seq_as {
    ($ret:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($ret)
        }
    };
}

/// Visitor method consuming an object and returning `$ret`.
macro_rules! map_as {
    ($ret:expr) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($ret)
        }
    };
}

/// Visitor methods mapping `null` to `$ret`.
macro_rules! null_as {
    ($ret:expr) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($ret)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($ret)
        }
    };
}

/// A top-level payload: an object read as `T`, the JSON `null`, or any other
/// value (a scalar or an array).
#[derive(Debug)]
pub enum Top<T> {
    /// An object, read as `T`.
    Object(T),
    /// The JSON `null`.
    Null,
    /// A scalar or an array (consumed, not kept).
    Other,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Top<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Top<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Top::Object)
            }
            null_as!(Top::Null);
            scalars_as!(Top::Other);
            seq_as!(Top::Other);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A string field; any other JSON type reads as absent.
#[derive(Debug, Default)]
pub struct LStr<'a>(pub Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for LStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = LStr<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(LStr(Some(Cow::Borrowed(v))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(LStr(Some(Cow::Owned(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(LStr(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(LStr(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(LStr(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(LStr(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(LStr(None))
            }
            null_as!(LStr(None));
            seq_as!(LStr(None));
            map_as!(LStr(None));
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// An integer field; floats are truncated, any other JSON type reads as absent.
#[derive(Debug, Default, Clone, Copy)]
pub struct LInt(pub Option<i64>);

impl<'de> Deserialize<'de> for LInt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LInt;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(LInt(Some(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(LInt(Some(i64::try_from(v).unwrap_or(i64::MAX))))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                // `as` saturates and maps NaN to 0: no panic on any input.
                Ok(LInt(Some(v as i64)))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(LInt(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(LInt(None))
            }
            null_as!(LInt(None));
            seq_as!(LInt(None));
            map_as!(LInt(None));
        }
        d.deserialize_any(V)
    }
}

/// An object field; any other JSON type (including `null`) reads as absent.
#[derive(Debug)]
pub struct LObj<T>(pub Option<T>);

impl<T> Default for LObj<T> {
    fn default() -> Self {
        LObj(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for LObj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = LObj<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(|t| LObj(Some(t)))
            }
            scalars_as!(LObj(None));
            null_as!(LObj(None));
            seq_as!(LObj(None));
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// An array of objects; non-object elements are skipped, a non-array reads
/// as empty.
#[derive(Debug)]
pub struct LArr<T>(pub Vec<T>);

impl<T> Default for LArr<T> {
    fn default() -> Self {
        LArr(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for LArr<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = LArr<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(LObj(x)) = seq.next_element::<LObj<T>>()? {
                    out.extend(x);
                }
                Ok(LArr(out))
            }
            scalars_as!(LArr(Vec::new()));
            null_as!(LArr(Vec::new()));
            map_as!(LArr(Vec::new()));
        }
        d.deserialize_any(V(PhantomData))
    }
}
