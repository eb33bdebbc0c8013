//! The layout of a [`SchedulerBody`] in a checkpoint, by version: the
//! parts of a scheduler state in the order they are written, `held` only
//! from version 4 on (a state of version 3 reads as one holding none).
//! Hand-written rather than derived because the parts a state has depend
//! on its version, which serde's derive cannot express in bincode.

use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::resumable::scheduler_state::SchedulerBody;

/// The first version with [`SchedulerBody::held`].
const HELD_SINCE: u32 = 4;

/// The fields of a [`SchedulerBody`], in the order they are written.
const FIELDS: &[&str] = &[
    "version",
    "graph",
    "requests",
    "interrupted",
    "counters",
    "values",
    "held",
];

impl Serialize for SchedulerBody {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let held = self.version >= HELD_SINCE;
        let mut st = s.serialize_struct("SchedulerBody", FIELDS.len() - usize::from(!held))?;
        st.serialize_field("version", &self.version)?;
        st.serialize_field("graph", &self.graph)?;
        st.serialize_field("requests", &self.requests)?;
        st.serialize_field("interrupted", &self.interrupted)?;
        st.serialize_field("counters", &self.counters)?;
        st.serialize_field("values", &self.values)?;
        if held {
            st.serialize_field("held", &self.held)?;
        }
        st.end()
    }
}

impl<'de> Deserialize<'de> for SchedulerBody {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_struct("SchedulerBody", FIELDS, BodyVisitor)
    }
}

/// Reads a [`SchedulerBody`] of any version: in order (bincode), the
/// parts its version has; by name (JSON), those present.
struct BodyVisitor;

impl<'de> Visitor<'de> for BodyVisitor {
    type Value = SchedulerBody;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scheduler state")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SchedulerBody, A::Error> {
        let missing = |i: usize| de::Error::invalid_length(i, &"a scheduler state");
        let version: u32 = seq.next_element()?.ok_or_else(|| missing(0))?;
        let graph = seq.next_element()?.ok_or_else(|| missing(1))?;
        let requests = seq.next_element()?.ok_or_else(|| missing(2))?;
        let interrupted = seq.next_element()?.ok_or_else(|| missing(3))?;
        let counters = seq.next_element()?.unwrap_or_default();
        let values = seq.next_element()?.unwrap_or_default();
        let held = if version >= HELD_SINCE {
            seq.next_element()?.unwrap_or_default()
        } else {
            Vec::new()
        };
        Ok(SchedulerBody {
            version,
            graph,
            requests,
            interrupted,
            counters,
            values,
            held,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SchedulerBody, A::Error> {
        let mut body = SchedulerBody::default();
        let mut version = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "version" => version = Some(map.next_value()?),
                "graph" => body.graph = map.next_value()?,
                "requests" => body.requests = map.next_value()?,
                "interrupted" => body.interrupted = map.next_value()?,
                "counters" => body.counters = map.next_value()?,
                "values" => body.values = map.next_value()?,
                "held" => body.held = map.next_value()?,
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        body.version = version.ok_or_else(|| de::Error::missing_field("version"))?;
        Ok(body)
    }
}
