//! What the validator reads: any JSON value behind [`JsonRead`], and
//! [`ArgValue`], the borrowed argument tree the typed call path parses a
//! model's argument text into.
//!
//! `serde_json::Value` (built with ordered maps) costs an index map, a hash
//! of every key and an owned string per key and string on every parse.
//! Tool arguments are small objects read once: [`ArgValue`] keeps strings
//! borrowed from the text where they have no escapes and objects as a
//! vector of entries in text order, so parsing the bash tool's arguments
//! allocates once. Both implement [`JsonRead`], and validation, near-miss
//! notes and membership checks are written once, against the trait: the
//! same rules and the same wording for both.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A JSON value the validator can read.
pub trait JsonRead: Sized {
    /// Its objects.
    type Map: JsonMap<Value = Self>;

    /// The value's kind, borrowing its parts.
    fn kind(&self) -> JsonKind<'_, Self>;
}

/// One JSON value, seen through [`JsonRead`].
pub enum JsonKind<'v, V: JsonRead> {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number.
    Number(&'v Number),
    /// A string (unescaped).
    String(&'v str),
    /// An array.
    Array(&'v [V]),
    /// An object.
    Object(&'v V::Map),
}

/// A JSON object the validator can read. Keys are unique.
pub trait JsonMap {
    /// Its values.
    type Value: JsonRead;

    /// Number of entries.
    fn len(&self) -> usize;

    /// Whether the object has no entry.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value at `key`.
    fn get(&self, key: &str) -> Option<&Self::Value>;

    /// The value at `key`, tried first at entry `index` (arguments mostly
    /// come in the order of the spec, so a walk in spec order finds each
    /// key where it looks first).
    fn get_near(&self, index: usize, key: &str) -> Option<&Self::Value> {
        let _ = index;
        self.get(key)
    }

    /// Whether `key` is present.
    fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The entries in the object's order.
    fn entries(&self) -> impl Iterator<Item = (&str, &Self::Value)>;
}

impl JsonRead for Value {
    type Map = Map<String, Value>;

    fn kind(&self) -> JsonKind<'_, Self> {
        match self {
            Value::Null => JsonKind::Null,
            Value::Bool(b) => JsonKind::Bool(*b),
            Value::Number(n) => JsonKind::Number(n),
            Value::String(s) => JsonKind::String(s),
            Value::Array(a) => JsonKind::Array(a),
            Value::Object(m) => JsonKind::Object(m),
        }
    }
}

impl JsonMap for Map<String, Value> {
    type Value = Value;

    fn len(&self) -> usize {
        Map::len(self)
    }

    /// Tool arguments are small objects, where comparing keys beats hashing
    /// the name.
    fn get(&self, key: &str) -> Option<&Value> {
        if Map::len(self) <= 8 {
            self.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
        } else {
            Map::get(self, key)
        }
    }

    fn entries(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.iter().map(|(k, v)| (k.as_str(), v))
    }
}

/// A JSON value parsed from argument text, borrowing what it can.
///
/// Parsed by [`ArgValue::parse`] with serde_json's parser, so it accepts
/// exactly the texts `serde_json::from_str::<Value>` accepts, with the same
/// error messages, and reads as the same value: numbers the same
/// [`Number`]s, a duplicate key keeps its first position and its last
/// value (as an ordered `Value` map does; [`ArgValue::had_duplicate_keys`]
/// says whether that happened anywhere).
#[derive(Debug, Clone, PartialEq)]
pub enum ArgValue<'a> {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number.
    Number(Number),
    /// A string: borrowed from the text unless it had escapes.
    String(Cow<'a, str>),
    /// An array.
    Array(Vec<ArgValue<'a>>),
    /// An object.
    Object(ArgMap<'a>),
}

/// The object of an [`ArgValue`]: entries in text order, keys unique.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArgMap<'a> {
    entries: Vec<(Cow<'a, str>, ArgValue<'a>)>,
    /// Whether the text repeated a key of this object or of one inside it.
    duplicates: bool,
}

/// Up to this many entries a repeated key is found by scanning.
const SCAN_KEYS: usize = 16;

impl<'a> ArgValue<'a> {
    /// Parses argument text (strict JSON, one value, whitespace around it
    /// allowed).
    ///
    /// # Errors
    /// serde_json's syntax error, worded and positioned as for
    /// `serde_json::from_str::<Value>`.
    pub fn parse(text: &'a str) -> Result<Self, serde_json::Error> {
        match Fast::parse(text) {
            Some(value) => Ok(value),
            None => serde_json::from_str(text),
        }
    }

    /// Whether some object in the value repeated a key (the last value won).
    pub fn had_duplicate_keys(&self) -> bool {
        match self {
            ArgValue::Object(m) => m.duplicates,
            ArgValue::Array(items) => items.iter().any(ArgValue::had_duplicate_keys),
            _ => false,
        }
    }

    /// The same value as a `serde_json::Value`.
    pub fn to_value(&self) -> Value {
        match self {
            ArgValue::Null => Value::Null,
            ArgValue::Bool(b) => Value::Bool(*b),
            ArgValue::Number(n) => Value::Number(n.clone()),
            ArgValue::String(s) => Value::String(s.to_string()),
            ArgValue::Array(items) => Value::Array(items.iter().map(ArgValue::to_value).collect()),
            ArgValue::Object(m) => Value::Object(
                m.entries
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_value()))
                    .collect(),
            ),
        }
    }
}

impl<'a> JsonRead for ArgValue<'a> {
    type Map = ArgMap<'a>;

    fn kind(&self) -> JsonKind<'_, Self> {
        match self {
            ArgValue::Null => JsonKind::Null,
            ArgValue::Bool(b) => JsonKind::Bool(*b),
            ArgValue::Number(n) => JsonKind::Number(n),
            ArgValue::String(s) => JsonKind::String(s),
            ArgValue::Array(a) => JsonKind::Array(a),
            ArgValue::Object(m) => JsonKind::Object(m),
        }
    }
}

impl<'a> JsonMap for ArgMap<'a> {
    type Value = ArgValue<'a>;

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn get(&self, key: &str) -> Option<&ArgValue<'a>> {
        self.entries
            .iter()
            .find(|(k, _)| same_key(k, key))
            .map(|(_, v)| v)
    }

    fn get_near(&self, index: usize, key: &str) -> Option<&ArgValue<'a>> {
        match self.entries.get(index) {
            Some((k, v)) if same_key(k, key) => Some(v),
            _ => self.get(key),
        }
    }

    fn entries(&self) -> impl Iterator<Item = (&str, &ArgValue<'a>)> {
        self.entries.iter().map(|(k, v)| (k.as_ref(), v))
    }
}

/// `a == b` for argument names: the lengths first, then the bytes.
/// Short names are compared with word loads rather than by a call to
/// `memcmp`.
#[inline]
fn same_key(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    // Equal lengths: two overlapping fixed-size loads per side cover every
    // byte of a key of 4 to 16 bytes.
    fn word4(s: &[u8], at: usize) -> u32 {
        s.get(at..at + 4)
            .and_then(|w| <[u8; 4]>::try_from(w).ok())
            .map_or(0, u32::from_ne_bytes)
    }
    fn word8(s: &[u8], at: usize) -> u64 {
        s.get(at..at + 8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
            .map_or(0, u64::from_ne_bytes)
    }
    let n = a.len();
    match n {
        0..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        4..=7 => word4(a, 0) == word4(b, 0) && word4(a, n - 4) == word4(b, n - 4),
        8..=16 => word8(a, 0) == word8(b, 0) && word8(a, n - 8) == word8(b, n - 8),
        _ => a == b,
    }
}

impl<'a> ArgMap<'a> {
    /// Adds an entry as an ordered `Value` map does: a repeated key keeps
    /// its first position and takes the new value. `index` (key →
    /// position) is built once the object outgrows scanning.
    #[inline(always)]
    fn insert(
        &mut self,
        key: Cow<'a, str>,
        value: ArgValue<'a>,
        index: &mut Option<HashMap<String, usize>>,
    ) {
        if self.is_new_small_key(&key, index) {
            self.duplicates |= value.had_duplicate_keys();
            self.entries.push((key, value));
            return;
        }
        self.insert_slow(key, value, index);
    }

    /// The common case of an insert: a key not yet present in an object
    /// small enough to be scanned (no `index` built).
    #[inline(always)]
    fn is_new_small_key(&self, key: &str, index: &Option<HashMap<String, usize>>) -> bool {
        index.is_none()
            && self.entries.len() < SCAN_KEYS
            && !self.entries.iter().any(|(k, _)| same_key(k, key))
    }

    /// [`ArgMap::insert`] for a repeated key or a large object.
    fn insert_slow(
        &mut self,
        key: Cow<'a, str>,
        value: ArgValue<'a>,
        index: &mut Option<HashMap<String, usize>>,
    ) {
        self.duplicates |= value.had_duplicate_keys();
        let at = match index {
            Some(index) => index.get(key.as_ref()).copied(),
            None => self.entries.iter().position(|(k, _)| same_key(k, &key)),
        };
        match at {
            Some(at) => {
                self.duplicates = true;
                self.entries[at].1 = value;
            }
            None => {
                if let Some(index) = index {
                    index.insert(key.to_string(), self.entries.len());
                }
                self.entries.push((key, value));
                if index.is_none() && self.entries.len() > SCAN_KEYS {
                    *index = Some(
                        self.entries
                            .iter()
                            .enumerate()
                            .map(|(i, (k, _))| (k.to_string(), i))
                            .collect(),
                    );
                }
            }
        }
    }
}

/// The fast path of [`ArgValue::parse`]: a plain recursive descent over
/// the bytes for well-formed text. It gives up (`None`) on anything it is
/// not sure of (a syntax error, deep nesting, a number other than a short
/// integer is handed to serde_json's own number parser, a string with
/// escapes to serde_json's string parser), and the caller then parses the
/// whole text with serde_json, so accepted texts, values and error
/// messages stay serde_json's.
struct Fast<'a> {
    text: &'a str,
    at: usize,
    depth: u32,
}

/// The longest string with escapes the fast path unescapes itself (through
/// serde_json's string parser); a longer one sends the whole text to
/// serde_json.
const ESCAPED_INLINE: usize = 1024;

/// Nesting the fast path takes on (serde_json's own limit is 128).
const FAST_DEPTH: u32 = 64;

impl<'a> Fast<'a> {
    fn parse(text: &'a str) -> Option<ArgValue<'a>> {
        let mut p = Fast {
            text,
            at: 0,
            depth: 0,
        };
        p.skip_ws();
        let mut value = ArgValue::Null;
        p.value_into(&mut value)?;
        p.skip_ws();
        (p.at == text.len()).then_some(value)
    }

    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    #[inline(always)]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    #[inline(always)]
    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Parses one value into `out` (written in place: values are not
    /// moved through return slots on the way up).
    fn value_into(&mut self, out: &mut ArgValue<'a>) -> Option<()> {
        *out = match self.peek()? {
            b'{' => return self.object_into(out),
            b'[' => return self.array_into(out),
            b'"' => ArgValue::String(self.string()?),
            b't' => self.literal("true", ArgValue::Bool(true))?,
            b'f' => self.literal("false", ArgValue::Bool(false))?,
            b'n' => self.literal("null", ArgValue::Null)?,
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return None,
        };
        Some(())
    }

    #[inline(always)]
    fn literal(&mut self, word: &str, value: ArgValue<'a>) -> Option<ArgValue<'a>> {
        self.text[self.at..].starts_with(word).then(|| {
            self.at += word.len();
            value
        })
    }

    fn object_into(&mut self, out: &mut ArgValue<'a>) -> Option<()> {
        self.depth += 1;
        if self.depth > FAST_DEPTH {
            return None;
        }
        self.at += 1;
        *out = ArgValue::Object(ArgMap::default());
        let ArgValue::Object(map) = out else {
            return None;
        };
        let mut index = None;
        self.skip_ws();
        if self.eat(b'}').is_none() {
            loop {
                self.skip_ws();
                if self.peek()? != b'"' {
                    return None;
                }
                let key = self.string()?;
                self.skip_ws();
                self.eat(b':')?;
                self.skip_ws();
                if map.is_new_small_key(&key, &index) {
                    // Parsed in its slot.
                    map.entries.push((key, ArgValue::Null));
                    let (_, slot) = map.entries.last_mut()?;
                    self.value_into(slot)?;
                    map.duplicates |= slot.had_duplicate_keys();
                } else {
                    let mut value = ArgValue::Null;
                    self.value_into(&mut value)?;
                    map.insert_slow(key, value, &mut index);
                }
                self.skip_ws();
                match self.peek()? {
                    b',' => self.at += 1,
                    b'}' => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    fn array_into(&mut self, out: &mut ArgValue<'a>) -> Option<()> {
        self.depth += 1;
        if self.depth > FAST_DEPTH {
            return None;
        }
        self.at += 1;
        *out = ArgValue::Array(Vec::new());
        let ArgValue::Array(items) = out else {
            return None;
        };
        self.skip_ws();
        if self.eat(b']').is_none() {
            loop {
                self.skip_ws();
                items.push(ArgValue::Null);
                let slot = items.last_mut()?;
                self.value_into(slot)?;
                self.skip_ws();
                match self.peek()? {
                    b',' => self.at += 1,
                    b']' => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// A string literal at `"`: borrowed when it has no escape; a short one
    /// with escapes is unescaped by serde_json's string parser, a long one
    /// gives the text to serde_json whole (one scan of it beats two).
    #[inline(always)]
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let bytes = self.text.as_bytes();
        let start = self.at + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            let rest = bytes.get(i..)?;
            let stop = memchr::memchr2(b'"', b'\\', rest)?;
            // Control characters must be escaped: serde_json reports them.
            if rest[..stop].iter().fold(false, |any, &b| any | (b < 0x20)) {
                return None;
            }
            i += stop;
            if bytes[i] == b'"' {
                break;
            }
            escaped = true;
            i += 2;
            if i - start > ESCAPED_INLINE {
                return None;
            }
        }
        self.at = i + 1;
        if !escaped {
            return self.text.get(start..i).map(Cow::Borrowed);
        }
        // The literal, quotes included (`"` and `\` are ASCII: the slice
        // ends on character boundaries).
        serde_json::from_str::<String>(self.text.get(start - 1..=i)?)
            .ok()
            .map(Cow::Owned)
    }

    /// A number: a short integer read here (as serde_json reads it: a
    /// non-negative one as `u64`, a negative one as `i64`), anything else
    /// by serde_json's number parser.
    #[inline(always)]
    fn number(&mut self) -> Option<ArgValue<'a>> {
        let bytes = self.text.as_bytes();
        let start = self.at;
        let mut end = start;
        while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = bytes.get(end) {
            end += 1;
        }
        let token = self.text.get(start..end)?;
        self.at = end;
        let (negative, digits) = match token.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, token),
        };
        let short_integer = !digits.is_empty()
            && digits.len() <= 18
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'));
        if short_integer && !(negative && digits == "0") {
            let n: u64 = digits.parse().ok()?;
            return Some(ArgValue::Number(if negative {
                // At most 18 digits: fits an i64.
                Number::from(-(i64::try_from(n).ok()?))
            } else {
                Number::from(n)
            }));
        }
        serde_json::from_str::<Number>(token)
            .ok()
            .map(ArgValue::Number)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ArgValue<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ArgVisitor(std::marker::PhantomData))
    }
}

struct ArgVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for ArgVisitor<'a> {
    type Value = ArgValue<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(ArgValue::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(ArgValue::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(ArgValue::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        // As `Value`: the parser yields finite floats only.
        Ok(Number::from_f64(v).map_or(ArgValue::Null, ArgValue::Number))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(ArgValue::String(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(ArgValue::String(Cow::Owned(v.to_string())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(ArgValue::String(Cow::Owned(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(ArgValue::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(ArgValue::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        ArgValue::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element::<ArgValue<'a>>()? {
            items.push(item);
        }
        Ok(ArgValue::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = ArgMap {
            entries: Vec::new(),
            duplicates: false,
        };
        // Past `SCAN_KEYS` entries, key → position.
        let mut index: Option<HashMap<String, usize>> = None;
        while let Some(Key(key)) = map.next_key::<Key<'a>>()? {
            let value: ArgValue<'a> = map.next_value()?;
            out.insert(key, value, &mut index);
        }
        Ok(ArgValue::Object(out))
    }
}

/// An object key, borrowed from the text unless it had escapes (serde's
/// own `Cow` always copies).
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Key<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

/// Whether `a` and `b` are the same JSON value (numbers as serde_json
/// compares them, objects regardless of order), as `Value`'s `==` is.
pub(crate) fn json_eq<V: JsonRead>(a: &Value, b: &V) -> bool {
    match (a, b.kind()) {
        (Value::Null, JsonKind::Null) => true,
        (Value::Bool(x), JsonKind::Bool(y)) => *x == y,
        (Value::Number(x), JsonKind::Number(y)) => x == y,
        (Value::String(x), JsonKind::String(y)) => x == y,
        (Value::Array(x), JsonKind::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), JsonKind::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, a)| y.get(k).is_some_and(|b| json_eq(a, b)))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::same_key;

    #[test]
    fn same_key_agrees_with_string_equality_at_every_length_and_position() {
        for len in 0..=40usize {
            let a: String = (0..len)
                .map(|i| char::from(b'a' + (i % 26) as u8))
                .collect();
            assert!(same_key(&a, &a.clone()), "{len}");
            for at in 0..len {
                let mut b = a.clone().into_bytes();
                b[at] = b'#';
                let b = String::from_utf8(b).unwrap_or_default();
                assert!(!same_key(&a, &b), "{len} at {at}");
            }
            assert!(!same_key(&a, &format!("{a}x")));
        }
    }
}
