//! The paths of a workflow's participants, made once for the path its runs
//! start at and shared by every run that starts there.
//!
//! A participant's path (`team/writer`) names its events, spans and
//! stats. Formatting it anew for every participant of every run cost each
//! run an allocation and a format per participant, and kept as many copies
//! of the same few strings as there were runs at once (a chatbot's
//! thousands of conversations of one team). Runs of one workflow almost
//! always start at one path, so the last one is kept.

use std::sync::{Arc, Mutex};

use crate::context::RunContext;

/// Participants' paths, in order.
type Paths = Arc<[Arc<str>]>;

/// The participants' paths under the path runs last started at.
#[derive(Default)]
pub(crate) struct ChildPaths {
    /// The start path and the paths under it.
    last: Mutex<Option<(Arc<str>, Paths)>>,
}

impl ChildPaths {
    /// The paths of `names` under `ctx`'s path, in order.
    pub(crate) fn under(&self, ctx: &RunContext, names: &[Arc<str>]) -> Paths {
        // Paths stay consistent whatever panicked while this was locked.
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((parent, paths)) = &*last
            && **parent == **ctx.path()
        {
            return paths.clone();
        }
        let paths: Paths = names.iter().map(|n| ctx.child_path(n)).collect();
        *last = Some((ctx.path().clone(), paths.clone()));
        paths
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_shared_under_one_parent_and_made_again_under_another() {
        let cache = ChildPaths::default();
        let names: Vec<Arc<str>> = vec!["a".into(), "b".into()];
        let top = RunContext::new().child("team");
        let first = cache.under(&top, &names);
        assert_eq!(&*first[0], "team/a");
        assert_eq!(&*first[1], "team/b");
        // Another run at the same path: the very same strings.
        let again = cache.under(&RunContext::new().child("team"), &names);
        assert!(Arc::ptr_eq(&first, &again));
        // Nested elsewhere: paths of their own.
        let nested = cache.under(&RunContext::new().child("outer").child("team"), &names);
        assert_eq!(&*nested[1], "outer/team/b");
        let root = cache.under(&RunContext::new(), &names);
        assert_eq!(&*root[0], "a");
    }
}
