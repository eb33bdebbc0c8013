//! cagent's list form (seed 004): a workflow written as its list of steps,
//! `workflow: [steps…]`, is read as `workflow: {steps: [steps…]}` — for
//! the main workflow and the named ones under `workflows:`. The tree is
//! rewritten before it is deserialized, so every position stays where it
//! was written (a step's errors point at the step, under
//! `workflow.steps[N]`).

use crate::tree::{Key, Node, Value};

/// Rewrites `workflow:` and every `workflows.NAME:` written as a list into
/// a mapping with that list under `steps:`.
pub(crate) fn normalize(tree: &mut Node) {
    let Value::Map(entries) = &mut tree.value else {
        return;
    };
    for (key, node) in entries.iter_mut() {
        match key.name.as_str() {
            "workflow" => as_steps(node),
            "workflows" => {
                if let Value::Map(named) = &mut node.value {
                    named.iter_mut().for_each(|(_, w)| as_steps(w));
                }
            }
            _ => {}
        }
    }
}

fn as_steps(node: &mut Node) {
    if !matches!(node.value, Value::Seq(_)) {
        return;
    }
    let steps = Node {
        at: node.at,
        value: std::mem::replace(&mut node.value, Value::Null),
    };
    let key = Key {
        name: "steps".into(),
        at: node.at,
    };
    node.value = Value::Map(vec![(key, steps)]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree;

    #[test]
    fn a_listed_workflow_becomes_its_steps_and_a_mapping_stays() {
        let mut listed = tree::parse(
            "workflow:\n  - agent: a\nworkflows:\n  w:\n    - agent: b\n  m:\n    steps: []\n",
        )
        .unwrap_or_else(|e| panic!("{}", e.message));
        normalize(&mut listed);
        let want = tree::parse("workflow:\n  steps:\n    - agent: a\nworkflows:\n  w:\n    steps:\n      - agent: b\n  m:\n    steps: []\n")
            .unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!(shape(&listed), shape(&want));
    }

    /// The tree without positions.
    fn shape(n: &Node) -> String {
        match &n.value {
            Value::Seq(items) => format!(
                "[{}]",
                items.iter().map(shape).collect::<Vec<_>>().join(",")
            ),
            Value::Map(entries) => format!(
                "{{{}}}",
                entries
                    .iter()
                    .map(|(k, v)| format!("{}:{}", k.name, shape(v)))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            other => format!("{other:?}"),
        }
    }
}
