//! [`Shorthand`]: one deserializer for every config value that may be
//! written short, as a string, or in full.
//!
//! A config says `nodes: [writer]` or `nodes: [{agent: writer, join:
//! all}]`, `when: always` or `when: {contains: done}`, `from: user` or
//! `from: [user, a]`. Each such value is a type implementing [`ShortForm`]
//! — what a string stands for, what the long form is — wrapped in
//! [`Shorthand`], which deserializes either form and gives the JSON Schema
//! `anyOf: [string, long form]`. The long form is a mapping or a list
//! ([`ShortForm::LONG_IS_LIST`]); the other shape, and any other scalar,
//! is a wrong type, reported with [`ShortForm::EXPECTING`].

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Unexpected, Visitor};

/// A config value with a short form: a string standing for a longer value
/// written as a mapping (or, with [`ShortForm::LONG_IS_LIST`], a list).
///
/// ```
/// use serde::Deserialize;
/// use troupe_config::{ShortForm, Shorthand};
///
/// /// A greeting: a name alone, or `{name, times}`.
/// #[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
/// struct Greeting { name: String, #[serde(default)] times: u32 }
///
/// impl ShortForm for Greeting {
///     type Long = Greeting;
///     const NAME: &'static str = "Greeting";
///     const SHORT: &'static str = "A name, greeted once.";
///     const EXPECTING: &'static str = "a name, or a mapping with `name`";
///     fn from_short(text: &str) -> Self {
///         Greeting { name: text.to_string(), times: 1 }
///     }
///     fn from_long(long: Greeting) -> Self {
///         long
///     }
/// }
///
/// let short: Shorthand<Greeting> = serde_json::from_str(r#""ada""#)?;
/// assert_eq!(short.0, Greeting { name: "ada".into(), times: 1 });
/// let long: Shorthand<Greeting> = serde_json::from_str(r#"{"name": "bob", "times": 2}"#)?;
/// assert_eq!(long.0.times, 2);
/// let wrong = serde_json::from_str::<Shorthand<Greeting>>("[1]").unwrap_err();
/// assert!(wrong.to_string().contains("a name, or a mapping with `name`"));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub trait ShortForm: Sized {
    /// What is written when a string will not do.
    type Long: DeserializeOwned + JsonSchema;
    /// Whether the long form is a list rather than a mapping.
    const LONG_IS_LIST: bool = false;
    /// The value's name in the JSON Schema (either form).
    const NAME: &'static str;
    /// What the string form means, for the JSON Schema.
    const SHORT: &'static str;
    /// What may be written here, for errors.
    const EXPECTING: &'static str;
    /// The value a string stands for.
    fn from_short(text: &str) -> Self;
    /// The value the long form gives.
    fn from_long(long: Self::Long) -> Self;
}

/// A `T` as a config writes it: a string (its short form) or its long
/// form; either way, the value is `.0`.
#[derive(Debug, Clone, PartialEq)]
pub struct Shorthand<T>(pub T);

impl<'de, T: ShortForm> Deserialize<'de> for Shorthand<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ShorthandVisitor(PhantomData))
    }
}

struct ShorthandVisitor<T>(PhantomData<T>);

impl<'de, T: ShortForm> Visitor<'de> for ShorthandVisitor<T> {
    type Value = Shorthand<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Shorthand<T>, E> {
        Ok(Shorthand(T::from_short(text)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Shorthand<T>, A::Error> {
        if T::LONG_IS_LIST {
            return Err(de::Error::invalid_type(Unexpected::Map, &self));
        }
        T::Long::deserialize(MapAccessDeserializer::new(map)).map(|l| Shorthand(T::from_long(l)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Shorthand<T>, A::Error> {
        if !T::LONG_IS_LIST {
            return Err(de::Error::invalid_type(Unexpected::Seq, &self));
        }
        T::Long::deserialize(SeqAccessDeserializer::new(seq)).map(|l| Shorthand(T::from_long(l)))
    }
}

impl<T: ShortForm> JsonSchema for Shorthand<T> {
    fn schema_name() -> Cow<'static, str> {
        T::NAME.into()
    }

    fn schema_id() -> Cow<'static, str> {
        format!("troupe_config::Shorthand<{}>", T::NAME).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut short = serde_json::Map::new();
        short.insert("type".into(), "string".into());
        short.insert("description".into(), T::SHORT.into());
        let long = generator.subschema_for::<T::Long>();
        let mut map = serde_json::Map::new();
        map.insert(
            "anyOf".into(),
            serde_json::Value::Array(vec![short.into(), long.to_value()]),
        );
        Schema::from(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A list of words, or one word alone.
    #[derive(Debug, PartialEq)]
    struct Words(Vec<String>);

    impl ShortForm for Words {
        type Long = Vec<String>;
        const LONG_IS_LIST: bool = true;
        const NAME: &'static str = "Words";
        const SHORT: &'static str = "One word.";
        const EXPECTING: &'static str = "a word or a list of words";
        fn from_short(text: &str) -> Self {
            Words(vec![text.to_string()])
        }
        fn from_long(long: Vec<String>) -> Self {
            Words(long)
        }
    }

    fn words(json: &str) -> Result<Vec<String>, String> {
        serde_json::from_str::<Shorthand<Words>>(json)
            .map(|w| w.0.0)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn either_form_reads_and_the_other_shapes_do_not() {
        assert_eq!(words(r#""a""#).unwrap(), ["a"]);
        assert_eq!(words(r#"["a", "b"]"#).unwrap(), ["a", "b"]);
        for wrong in [r#"{"a": 1}"#, "3", "null", "true"] {
            let e = words(wrong).unwrap_err();
            assert!(
                e.contains("expected a word or a list of words"),
                "{wrong}: {e}"
            );
        }
        // The long form's own errors come through.
        assert!(words("[1]").unwrap_err().contains("expected a string"));
    }

    #[test]
    fn the_schema_offers_both_forms() {
        let schema = schemars::schema_for!(Shorthand<Words>).to_value();
        assert_eq!(schema["title"], "Words");
        let forms = schema["anyOf"].as_array().unwrap();
        assert_eq!(forms[0]["type"], "string");
        assert_eq!(forms[0]["description"], "One word.");
        assert_eq!(forms[1]["type"], "array");
    }
}
