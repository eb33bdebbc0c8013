//! [`Source`]: which senders a route takes messages from.

/// The senders a route takes messages from: anyone, one name, or several.
///
/// Names are participants, `"user"` (the caller), or entries declared with
/// [`RouterBuilder::entry`](crate::RouterBuilder::entry). Built from a name,
/// a list of names, or [`Router::ANY`](crate::Router::ANY).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Source {
    /// Every sender, except the target itself unless a route names it.
    Any,
    /// One sender.
    One(String),
    /// Several senders.
    Many(Vec<String>),
}

impl Source {
    /// The names this source lists; empty for [`Source::Any`].
    pub fn names(&self) -> &[String] {
        match self {
            Self::Any => &[],
            Self::One(name) => std::slice::from_ref(name),
            Self::Many(names) => names,
        }
    }
}

/// The type of [`Router::ANY`](crate::Router::ANY): a route source matching
/// every sender.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AnySource;

impl From<AnySource> for Source {
    fn from(_: AnySource) -> Self {
        Self::Any
    }
}

impl From<&str> for Source {
    fn from(name: &str) -> Self {
        Self::One(name.to_owned())
    }
}

impl From<String> for Source {
    fn from(name: String) -> Self {
        Self::One(name)
    }
}

impl From<&String> for Source {
    fn from(name: &String) -> Self {
        Self::One(name.clone())
    }
}

impl From<Vec<&str>> for Source {
    fn from(names: Vec<&str>) -> Self {
        Self::Many(names.into_iter().map(str::to_owned).collect())
    }
}

impl From<Vec<String>> for Source {
    fn from(names: Vec<String>) -> Self {
        Self::Many(names)
    }
}

impl<const N: usize> From<[&str; N]> for Source {
    fn from(names: [&str; N]) -> Self {
        Self::Many(names.into_iter().map(str::to_owned).collect())
    }
}

impl From<&[&str]> for Source {
    fn from(names: &[&str]) -> Self {
        Self::Many(names.iter().map(|&n| n.to_owned()).collect())
    }
}

impl From<&[String]> for Source {
    fn from(names: &[String]) -> Self {
        Self::Many(names.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        assert_eq!(Source::from(AnySource), Source::Any);
        assert_eq!(Source::from("a"), Source::One("a".into()));
        assert_eq!(Source::from(String::from("a")), Source::One("a".into()));
        assert_eq!(Source::from(&String::from("a")), Source::One("a".into()));
        let many = Source::Many(vec!["a".into(), "b".into()]);
        assert_eq!(Source::from(vec!["a", "b"]), many);
        assert_eq!(
            Source::from(vec![String::from("a"), String::from("b")]),
            many
        );
        assert_eq!(Source::from(["a", "b"]), many);
        let slice: &[&str] = &["a", "b"];
        assert_eq!(Source::from(slice), many);
        let owned = [String::from("a"), String::from("b")];
        assert_eq!(Source::from(&owned[..]), many);
    }

    #[test]
    fn names() {
        assert!(Source::Any.names().is_empty());
        assert_eq!(Source::from("a").names(), ["a"]);
        assert_eq!(Source::from(["a", "b"]).names(), ["a", "b"]);
    }
}
