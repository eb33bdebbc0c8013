//! What a node receives of its predecessors, and the one place their
//! outputs are rendered into a node's input: as cagent's "prior step
//! outputs" or as attachments (id, description, content).
//!
//! Graph nodes use it through [`NodeInput`]; planning renders its steps'
//! results with [`attachment`], so a plan step and a graph node given the
//! same outputs see the same text.

use std::sync::Arc;

use super::input_merge::InputMerge;
use crate::message::{Content, Message, USER};

/// Metadata key marking the message that stands for a node's predecessors'
/// outputs; its value is `prior_outputs`, `attachments`, the key (with
/// `key`) or `merge` (with `leading_args`, one message per predecessor:
/// its name).
pub const INPUT_KEY: &str = "troupe.input";

/// What a node receives of its predecessors.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(serde::Deserialize, schemars::JsonSchema))]
#[cfg_attr(feature = "schema", serde(rename_all = "snake_case"))]
pub enum NodeInput {
    /// Their messages enter its thread.
    #[default]
    Messages,
    /// One message listing each predecessor's last output by step id.
    PriorOutputs,
    /// One message carrying each predecessor's last output as an
    /// attachment (id, description, content).
    Attachments,
    /// Each predecessor's last output as a user message of its own, in
    /// the order they first spoke (the seed's `ResultAsLeadingArgs`: the
    /// results lead the node's input).
    LeadingArgs,
    /// The results under a named key (the seed's `"key_name"` mode,
    /// `{key: NAME}`): one user message `NAME:` and each predecessor's
    /// last output, in the order they first spoke.
    Key(String),
    /// One user message built by a function of each predecessor's last
    /// output (the seed's custom merge; a config's `merge: {template}`).
    #[cfg_attr(feature = "schema", serde(skip))]
    Merge(InputMerge),
}

/// One output as an attachment: its id, a description (double quotes
/// become single ones, so the attribute stays whole) and its content.
///
/// ```
/// use troupe_runtime::graph::attachment;
///
/// assert_eq!(
///     attachment("FIND", "find a \"good\" recipe", "a latte"),
///     "<attachment id=\"FIND\" description=\"find a 'good' recipe\">\na latte\n</attachment>"
/// );
/// ```
pub fn attachment(id: &str, description: &str, content: &str) -> String {
    let mut out = String::new();
    push_attachment(&mut out, id, description, content);
    out
}

fn push_attachment(out: &mut String, id: &str, description: &str, content: &str) {
    out.push_str("<attachment id=\"");
    out.push_str(id);
    out.push_str("\" description=\"");
    if description.contains('"') {
        out.push_str(&description.replace('"', "'"));
    } else {
        out.push_str(description);
    }
    out.push_str("\">\n");
    out.push_str(content);
    out.push_str("\n</attachment>");
}

/// The input a node with mode `mode` reads from the messages its
/// predecessors delivered: the messages themselves, or one user message
/// (marked with [`INPUT_KEY`]) standing for each sender's last output.
/// `describe` gives a sender's description for attachments.
#[inline]
pub(crate) fn render<'a>(
    mode: &NodeInput,
    messages: Vec<Arc<Message>>,
    describe: impl Fn(&str) -> &'a str,
) -> Vec<Arc<Message>> {
    if *mode == NodeInput::Messages || messages.is_empty() {
        return messages;
    }
    if let NodeInput::Key(_) | NodeInput::Merge(_) = mode {
        return vec![merged(mode, &messages)];
    }
    if *mode == NodeInput::LeadingArgs {
        return last_outputs(&messages)
            .into_iter()
            .map(|(step, m)| {
                Arc::new(
                    Message::new(USER, Content::Text(m.text_content().into_owned()))
                        .with_metadata(INPUT_KEY, step),
                )
            })
            .collect();
    }
    vec![render_one(mode, &messages, describe)]
}

/// Each sender's last output, in the order the senders first spoke.
fn last_outputs(messages: &[Arc<Message>]) -> Vec<(&str, &Arc<Message>)> {
    let mut last: Vec<(&str, &Arc<Message>)> = Vec::new();
    for m in messages {
        match last.iter_mut().find(|(s, _)| *s == &*m.source) {
            Some(entry) => entry.1 = m,
            None => last.push((&m.source, m)),
        }
    }
    last
}

/// The one message of the senders' last outputs under a key, or merged.
fn merged(mode: &NodeInput, messages: &[Arc<Message>]) -> Arc<Message> {
    let last: Vec<(&str, &Message)> = last_outputs(messages)
        .into_iter()
        .map(|(s, m)| (s, &**m))
        .collect();
    let (text, kind) = match mode {
        NodeInput::Merge(f) => (f.apply(&last), "merge".to_string()),
        NodeInput::Key(key) => {
            let values: Vec<_> = last.iter().map(|(_, m)| m.text_content()).collect();
            (format!("{key}:\n{}", values.join("\n\n")), key.clone())
        }
        _ => (String::new(), String::new()),
    };
    Arc::new(Message::new(USER, Content::Text(text)).with_metadata(INPUT_KEY, kind))
}

/// The one message standing for the senders' last outputs.
fn render_one<'a>(
    mode: &NodeInput,
    messages: &[Arc<Message>],
    describe: impl Fn(&str) -> &'a str,
) -> Arc<Message> {
    let last = last_outputs(messages);
    let mut text = String::new();
    let kind = match mode {
        NodeInput::PriorOutputs => {
            // The layout cagent injects, so prompts written for it fit.
            text.push_str("--- Prior Step Outputs ---\n\n");
            for (step, m) in &last {
                text.push_str(&format!(
                    "[{step} (agent: {step})]:\n{}\n\n",
                    m.text_content()
                ));
            }
            text.push_str("--- End Prior Step Outputs ---");
            "prior_outputs"
        }
        _ => {
            for (i, (step, m)) in last.iter().enumerate() {
                if i > 0 {
                    text.push('\n');
                }
                push_attachment(&mut text, step, describe(step), &m.text_content());
            }
            "attachments"
        }
    };
    let text = text.trim_end().to_string();
    Arc::new(Message::new(USER, Content::Text(text)).with_metadata(INPUT_KEY, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(source: &str, text: &str) -> Arc<Message> {
        Arc::new(Message::text(source, text))
    }

    #[test]
    fn messages_pass_as_they_are() {
        let ms = vec![from("a", "x"), from("b", "y")];
        let out = render(&NodeInput::Messages, ms.clone(), |_| "");
        assert_eq!(out, ms);
    }

    #[test]
    fn attachments_keep_each_senders_last_output_in_first_spoken_order() {
        let ms = vec![from("a", "old"), from("b", "y"), from("a", "new")];
        let out = render(&NodeInput::Attachments, ms, |s| {
            if s == "a" { "the \"a\" step" } else { "" }
        });
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].text_content(),
            "<attachment id=\"a\" description=\"the 'a' step\">\nnew\n</attachment>\n\
             <attachment id=\"b\" description=\"\">\ny\n</attachment>"
        );
        assert_eq!(
            out[0].metadata.get(INPUT_KEY).map(String::as_str),
            Some("attachments")
        );
    }

    #[test]
    fn prior_outputs_use_cagents_layout() {
        let out = render(&NodeInput::PriorOutputs, vec![from("a", "x")], |_| "");
        assert_eq!(
            out[0].text_content(),
            "--- Prior Step Outputs ---\n\n[a (agent: a)]:\nx\n\n--- End Prior Step Outputs ---"
        );
    }

    #[test]
    fn leading_args_are_each_senders_last_output_on_its_own() {
        let ms = vec![from("a", "old"), from("b", "y"), from("a", "new")];
        let out = render(&NodeInput::LeadingArgs, ms, |_| "");
        let texts: Vec<_> = out.iter().map(|m| m.text_content().into_owned()).collect();
        assert_eq!(texts, ["new", "y"]);
        assert!(out.iter().all(|m| &*m.source == USER));
        assert_eq!(
            out[1].metadata.get(INPUT_KEY).map(String::as_str),
            Some("b")
        );
    }

    #[test]
    fn a_key_names_the_results_and_a_merge_builds_them() {
        let ms = vec![from("a", "old"), from("b", "y"), from("a", "new")];
        let out = render(&NodeInput::Key("found".into()), ms.clone(), |_| "");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].text_content(), "found:\nnew\n\ny");
        assert_eq!(
            out[0].metadata.get(INPUT_KEY).map(String::as_str),
            Some("found")
        );
        let merge = InputMerge::new(|r| {
            r.iter()
                .map(|(s, m)| format!("<{s}:{}>", m.text_content()))
                .collect()
        });
        let out = render(&NodeInput::Merge(merge), ms, |_| "");
        assert_eq!(out[0].text_content(), "<a:new><b:y>");
        assert_eq!(&*out[0].source, USER);
    }

    #[test]
    fn nothing_delivered_is_no_input() {
        assert!(render(&NodeInput::Attachments, Vec::new(), |_| "").is_empty());
    }
}
