//! [`NodeDe`]: a serde `Deserializer` over one node of the position-aware
//! tree, placing every error at the node it is about and collecting
//! unknown fields instead of stopping at them.

use std::cell::RefCell;

use serde::de::{self, DeserializeSeed, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};

use super::error::DeError;
use crate::error::{Position, one_of};
use crate::tree::{FieldPath, Key, Node, Value};

/// What one pass finds besides the error that ends it.
#[derive(Default)]
pub(crate) struct Collector {
    unknown: RefCell<Vec<DeError>>,
    /// List items removed for an error already reported: skipped, so one
    /// bad item does not take its whole list with it.
    skipped: Vec<FieldPath>,
}

impl Collector {
    /// A collector that skips the list items at `skipped`.
    pub(super) fn skipping(skipped: Vec<FieldPath>) -> Self {
        Collector {
            unknown: RefCell::default(),
            skipped,
        }
    }

    /// The unknown fields met.
    pub(super) fn into_unknown(self) -> Vec<DeError> {
        self.unknown.into_inner()
    }

    fn unknown_field(&self, key: &Key, path: &FieldPath, fields: &'static [&'static str]) {
        let e = DeError::new(format!("unknown field `{}`", key.name))
            .expecting(one_of(fields))
            .locate(key.at, &path.key(key.name.clone()));
        self.unknown.borrow_mut().push(e);
    }
}

/// Deserializes from one node of the tree.
pub(super) struct NodeDe<'a> {
    node: &'a Node,
    path: FieldPath,
    collector: &'a Collector,
}

impl<'a> NodeDe<'a> {
    pub(super) fn new(node: &'a Node, path: FieldPath, collector: &'a Collector) -> Self {
        NodeDe {
            node,
            path,
            collector,
        }
    }

    fn place(&self, e: DeError) -> DeError {
        e.locate(self.node.at, &self.path)
    }

    fn scalar_text(&self) -> Option<String> {
        match &self.node.value {
            Value::Str(s) => Some(s.clone()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Int(n) => Some(n.to_string()),
            Value::UInt(n) => Some(n.to_string()),
            Value::Wide(n) => Some(n.clone()),
            Value::Float(n) => Some(n.to_string()),
            _ => None,
        }
    }
}

impl<'de> de::Deserializer<'de> for NodeDe<'_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let result = match &self.node.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Int(n) => visitor.visit_i64(*n),
            Value::UInt(n) => visitor.visit_u64(*n),
            // Within i128 a visitor may take it; beyond, it is a float to
            // whatever reads one (a JSON Schema's `maximum`), out of range
            // for anything else — quoted as written either way.
            Value::Wide(n) => match n.parse::<i128>() {
                Ok(v) => visitor.visit_i128(v),
                Err(_) => visitor.visit_f64(wide_float(n)),
            }
            .map_err(|e: DeError| e.quoting(n)),
            Value::Float(n) => visitor.visit_f64(*n),
            Value::Str(s) => visitor.visit_str(s),
            Value::Seq(items) => visitor.visit_seq(SeqAcc {
                items: items.iter().enumerate(),
                path: &self.path,
                collector: self.collector,
            }),
            Value::Map(entries) => visitor.visit_map(MapAcc {
                entries: entries.iter().collect::<Vec<_>>().into_iter(),
                value: None,
                path: &self.path,
                collector: self.collector,
            }),
        };
        result.map_err(|e| self.place(e))
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        // YAML users write `model: 4` or `name: 2024`: a scalar is text
        // wherever text is expected.
        match self.scalar_text() {
            Some(text) => visitor.visit_string(text).map_err(|e| self.place(e)),
            None => self.deserialize_any(visitor),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.node.value {
            Value::Null => visitor.visit_none().map_err(|e| self.place(e)),
            _ => {
                let (at, path) = (self.node.at, self.path.clone());
                visitor.visit_some(self).map_err(|e| e.locate(at, &path))
            }
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let (at, path) = (self.node.at, self.path.clone());
        visitor
            .visit_newtype_struct(self)
            .map_err(|e| e.locate(at, &path))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let Value::Map(entries) = &self.node.value else {
            // Not `deserialize_any`: a derived struct would also take a
            // list, reading its items as the fields in order.
            return Err(self.place(
                DeError::new(format!("wrong type: found {}", self.node.value.kind()))
                    .expecting("a mapping"),
            ));
        };
        let mut known = Vec::with_capacity(entries.len());
        for entry in entries {
            if fields.contains(&entry.0.name.as_str()) {
                known.push(entry);
            } else {
                self.collector.unknown_field(&entry.0, &self.path, fields);
            }
        }
        visitor
            .visit_map(MapAcc {
                entries: known.into_iter(),
                value: None,
                path: &self.path,
                collector: self.collector,
            })
            .map_err(|e| self.place(e))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let result = match &self.node.value {
            Value::Str(s) => visitor.visit_enum(EnumAcc {
                key: KeyDe {
                    name: s,
                    at: self.node.at,
                    path: self.path.clone(),
                },
                value: None,
                path: self.path.clone(),
                collector: self.collector,
            }),
            Value::Map(entries) if entries.len() == 1 => {
                let (key, value) = &entries[0];
                visitor.visit_enum(EnumAcc {
                    key: KeyDe {
                        name: &key.name,
                        at: key.at,
                        path: self.path.key(key.name.clone()),
                    },
                    value: Some(value),
                    path: self.path.key(key.name.clone()),
                    collector: self.collector,
                })
            }
            other => Err(
                DeError::new(format!("wrong form: found {}", other.kind())).expecting(format!(
                    "{} (alone, or as the single key of a mapping)",
                    one_of(variants)
                )),
            ),
        };
        result.map_err(|e| self.place(e))
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        // A float field takes an integer of any width (`1e26` written out).
        match &self.node.value {
            Value::Wide(n) => visitor.visit_f64(wide_float(n)).map_err(|e| self.place(e)),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 char
        bytes byte_buf unit unit_struct seq tuple tuple_struct map
    }
}

/// An integer written wider than 64 bits, as the nearest float.
fn wide_float(written: &str) -> f64 {
    written.parse().unwrap_or(f64::INFINITY)
}

struct SeqAcc<'a, I> {
    items: I,
    path: &'a FieldPath,
    collector: &'a Collector,
}

impl<'de, 'a, I: Iterator<Item = (usize, &'a Node)>> SeqAccess<'de> for SeqAcc<'a, I> {
    type Error = DeError;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        let mut next = self.items.next();
        while let Some((i, _)) = next
            && self.collector.skipped.contains(&self.path.index(i))
        {
            next = self.items.next();
        }
        match next {
            Some((i, node)) => seed
                .deserialize(NodeDe::new(node, self.path.index(i), self.collector))
                .map(Some),
            None => Ok(None),
        }
    }
    fn size_hint(&self) -> Option<usize> {
        self.items.size_hint().1
    }
}

struct MapAcc<'a, I> {
    entries: I,
    value: Option<&'a (Key, Node)>,
    path: &'a FieldPath,
    collector: &'a Collector,
}

impl<'de, 'a, I: Iterator<Item = &'a (Key, Node)>> MapAccess<'de> for MapAcc<'a, I> {
    type Error = DeError;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        match self.entries.next() {
            Some(entry) => {
                self.value = Some(entry);
                seed.deserialize(KeyDe {
                    name: &entry.0.name,
                    at: entry.0.at,
                    path: self.path.key(entry.0.name.clone()),
                })
                .map(Some)
            }
            None => Ok(None),
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        match self.value.take() {
            Some((key, node)) => seed.deserialize(NodeDe::new(
                node,
                self.path.key(key.name.clone()),
                self.collector,
            )),
            None => Err(DeError::new("a value was read before its key")),
        }
    }
}

/// A mapping key (or an enum's variant name), deserialized as text.
struct KeyDe<'a> {
    name: &'a str,
    at: Position,
    path: FieldPath,
}

impl<'de> de::Deserializer<'de> for KeyDe<'_> {
    type Error = DeError;
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor
            .visit_str(self.name)
            .map_err(|e: DeError| e.locate(self.at, &self.path))
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

struct EnumAcc<'a> {
    key: KeyDe<'a>,
    value: Option<&'a Node>,
    path: FieldPath,
    collector: &'a Collector,
}

impl<'de, 'a> EnumAccess<'de> for EnumAcc<'a> {
    type Error = DeError;
    type Variant = VariantAcc<'a>;
    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, VariantAcc<'a>), DeError> {
        let name = self.key.name.to_string();
        let at = self.key.at;
        let variant = seed.deserialize(self.key)?;
        Ok((
            variant,
            VariantAcc {
                name,
                at,
                value: self.value,
                path: self.path,
                collector: self.collector,
            },
        ))
    }
}

struct VariantAcc<'a> {
    name: String,
    at: Position,
    value: Option<&'a Node>,
    path: FieldPath,
    collector: &'a Collector,
}

impl VariantAcc<'_> {
    fn needs_value(&self) -> DeError {
        DeError::new(format!("`{}` needs a value", self.name))
            .expecting(format!("`{}: …`", self.name))
            .locate(self.at, &self.path)
    }
}

impl<'de> VariantAccess<'de> for VariantAcc<'_> {
    type Error = DeError;
    fn unit_variant(self) -> Result<(), DeError> {
        match self.value {
            None => Ok(()),
            Some(node) if node.value == Value::Null => Ok(()),
            Some(node) => Err(DeError::new(format!(
                "`{}` takes no value, found {}",
                self.name,
                node.value.kind()
            ))
            .expecting(format!("`{}` alone", self.name))
            .locate(node.at, &self.path)),
        }
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, DeError> {
        match self.value {
            Some(node) => seed.deserialize(NodeDe::new(node, self.path, self.collector)),
            None => Err(self.needs_value()),
        }
    }
    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, DeError> {
        match self.value {
            Some(node) => de::Deserializer::deserialize_seq(
                NodeDe::new(node, self.path, self.collector),
                visitor,
            ),
            None => Err(self.needs_value()),
        }
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self.value {
            Some(node) => de::Deserializer::deserialize_struct(
                NodeDe::new(node, self.path, self.collector),
                "",
                fields,
                visitor,
            ),
            None => Err(self.needs_value()),
        }
    }
}
