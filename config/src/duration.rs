//! [`HumanDuration`]: durations written as humantime strings (`30s`, `5m`,
//! `1h 30m`).

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, Deserialize, Deserializer, Visitor};

/// A duration written as a humantime string such as `"30s"`, `"5m"` or
/// `"1h 30m"`; a bare number is refused (a unit is required).
///
/// ```
/// use std::time::Duration;
/// use troupe_config::HumanDuration;
///
/// let d: HumanDuration = "1h 30m".parse()?;
/// assert_eq!(d.duration, Duration::from_secs(5400));
/// assert!("90".parse::<HumanDuration>().is_err());
/// # Ok::<(), humantime::DurationError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HumanDuration {
    /// As written.
    pub text: String,
    /// As parsed.
    pub duration: Duration,
}

impl std::str::FromStr for HumanDuration {
    type Err = humantime::DurationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(HumanDuration {
            text: s.to_string(),
            duration: humantime::parse_duration(s.trim())?,
        })
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = HumanDuration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration such as `30s`, `5m` or `1h`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<HumanDuration, E> {
                s.parse().map_err(|e| {
                    E::invalid_value(
                        de::Unexpected::Other(&format!("duration {s:?} ({e})")),
                        &"a duration such as `30s`, `5m` or `1h`",
                    )
                })
            }
        }
        deserializer.deserialize_str(V)
    }
}

impl JsonSchema for HumanDuration {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let mut map = serde_json::Map::new();
        map.insert("type".into(), "string".into());
        map.insert(
            "description".into(),
            "A duration with its unit, such as `30s`, `5m`, `1h 30m` or `500ms`.".into(),
        );
        map.insert("pattern".into(), r"^\s*([0-9]+\s*[a-zA-Zµ]+\s*)+$".into());
        Schema::from(map)
    }
}
