//! [`Thread`]: the ordered messages an agent works on, with the child
//! threads and scheduling state of a workflow, so that a whole run's state
//! lives in the value `run` returns.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use self::ids::Ids;
use crate::message::{Message, MessageId};
use crate::resumable::scheduler_state::SchedulerState;

/// How many messages a thread makes room for when it first grows.
const SHORT: usize = 16;

mod ids;

/// An ordered conversation.
///
/// A message enters a thread at most once (by [`MessageId`]), however many
/// inboxes it reached the thread through. A workflow keeps one child thread
/// per participant (or per shared group) in [`Thread::children`] and the
/// little it needs to continue in [`Thread::state`]: run a workflow again
/// with the thread it returned plus a new user message and it carries on.
///
/// ```
/// use troupe_runtime::{Message, Thread};
///
/// let mut thread = Thread::from_messages([Message::user("hello")]);
/// let again = thread.messages()[0].as_ref().clone();
/// assert!(!thread.push(again)); // already there: not added twice
/// assert_eq!(thread.len(), 1);
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(from = "ThreadRepr")]
pub struct Thread {
    messages: Vec<Arc<Message>>,
    // Derived from `messages` (see `ids.rs`); rebuilt on deserialization
    // rather than stored.
    ids: Ids,
    // Boxed: a map's node holds eleven entries by value, so a stored
    // session's three children took a 1.8 KiB node (0.4 boxed).
    children: BTreeMap<String, Box<Thread>>,
    state: Option<WorkflowState>,
}

/// What a workflow remembers between runs of one conversation.
///
/// Its checkpoint encoding is also written by hand, in
/// `checkpoint::snapshot_refs` (`StateRef`: its fields in this order, the
/// inboxes' messages by place or id): change the two together (the tests
/// `a_workflow_state_written_by_hand_is_what_serde_writes` and
/// `the_small_state_written_by_hand_is_what_serde_writes` pin them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkflowState {
    /// How many of the thread's own messages the workflow has already taken
    /// in; later ones are new input.
    pub consumed: usize,
    /// Messages still waiting in each participant's inbox.
    pub pending: BTreeMap<String, Vec<Arc<Message>>>,
    /// Turns taken so far, over every run of this conversation.
    pub turns: u64,
    /// The participant that spoke last.
    pub last_speaker: Option<String>,
    /// Where the scheduler stands: a graph's frontier, joins and loop
    /// counters, questions waiting for the caller, turns to run again —
    /// and the run's state values ([`SchedulerState::values`]).
    pub scheduler: SchedulerState,
}

impl Thread {
    /// An empty thread.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty thread with room for `n` messages.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Thread {
            messages: Vec::with_capacity(n),
            ..Self::default()
        }
    }

    /// A thread holding `messages` in order (duplicates by id are skipped).
    pub fn from_messages(messages: impl IntoIterator<Item = Message>) -> Self {
        let mut t = Self::new();
        for m in messages {
            t.push(m);
        }
        t
    }

    /// Appends a message unless one with the same id is already here.
    /// Returns whether it was added.
    pub fn push(&mut self, message: Message) -> bool {
        self.push_shared(Arc::new(message))
    }

    /// Appends a shared message unless one with the same id is already here.
    /// Returns whether it was added.
    pub fn push_shared(&mut self, message: Arc<Message>) -> bool {
        if self.contains(message.id) {
            return false;
        }
        self.ids.add(message.id, &self.messages);
        // Most threads are short: room for 16 messages at once, not
        // three allocations (4, 8, 16) copied into one another.
        let len = self.messages.len();
        if len == self.messages.capacity() && len < SHORT {
            self.messages.reserve_exact(SHORT - len);
        }
        self.messages.push(message);
        true
    }

    /// Whether a message with this id is in the thread.
    pub fn contains(&self, id: MessageId) -> bool {
        self.ids.contains(id, &self.messages)
    }

    /// The messages, oldest first.
    pub fn messages(&self) -> &[Arc<Message>] {
        &self.messages
    }

    /// The newest message.
    pub fn last(&self) -> Option<&Arc<Message>> {
        self.messages.last()
    }

    /// Number of messages (children not counted).
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether the thread holds no message.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Child threads by participant (or shared group) name.
    pub fn children(&self) -> &BTreeMap<String, Box<Thread>> {
        &self.children
    }

    /// The child thread of one participant.
    pub fn child(&self, name: &str) -> Option<&Thread> {
        self.children.get(name).map(|c| &**c)
    }

    /// Mutable access to the child threads.
    pub fn children_mut(&mut self) -> &mut BTreeMap<String, Box<Thread>> {
        &mut self.children
    }

    /// The workflow state, if a workflow ran on this thread.
    pub fn state(&self) -> Option<&WorkflowState> {
        self.state.as_ref()
    }

    /// Mutable access to the workflow state.
    pub fn state_mut(&mut self) -> &mut Option<WorkflowState> {
        &mut self.state
    }

    /// Lets go of the oldest messages so that at most `keep` remain (the
    /// children are not touched); returns how many went. A message let go
    /// is forgotten: were it delivered again, it would enter again.
    pub fn forget_oldest(&mut self, keep: usize) -> usize {
        let gone = self.messages.len().saturating_sub(keep);
        if gone > 0 {
            self.ids
                .forget(&self.messages[..gone], &self.messages[gone..]);
            self.messages.drain(..gone);
        }
        gone
    }

    /// Appends every message of `messages` (skipping known ids); returns how
    /// many were added.
    pub fn extend_shared(&mut self, messages: impl IntoIterator<Item = Arc<Message>>) -> usize {
        messages
            .into_iter()
            .map(|m| self.push_shared(m) as usize)
            .sum()
    }
}

impl PartialEq for Thread {
    fn eq(&self, other: &Self) -> bool {
        self.messages == other.messages
            && self.children == other.children
            && self.state == other.state
    }
}

/// The stored form of a thread: the id set is derived, so it is not stored.
#[derive(Deserialize)]
struct ThreadRepr {
    messages: Vec<Arc<Message>>,
    children: BTreeMap<String, Box<Thread>>,
    state: Option<WorkflowState>,
}

/// Borrowed twin of [`ThreadRepr`], so serializing never clones a thread.
#[derive(Serialize)]
struct ThreadReprRef<'a> {
    messages: &'a [Arc<Message>],
    children: &'a BTreeMap<String, Box<Thread>>,
    state: &'a Option<WorkflowState>,
}

impl From<ThreadRepr> for Thread {
    fn from(r: ThreadRepr) -> Self {
        let mut t = Thread {
            messages: Vec::with_capacity(r.messages.len()),
            ids: Ids::default(),
            children: r.children,
            state: r.state,
        };
        t.extend_shared(r.messages);
        t
    }
}

impl Serialize for Thread {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ThreadReprRef {
            messages: &self.messages,
            children: &self.children,
            state: &self.state,
        }
        .serialize(s)
    }
}

impl From<Vec<Message>> for Thread {
    fn from(v: Vec<Message>) -> Self {
        Thread::from_messages(v)
    }
}

#[cfg(test)]
mod tests {
    use super::ids::INDEXED_FROM;
    use super::*;

    #[test]
    fn a_message_enters_once() {
        let m = Message::user("x");
        let mut t = Thread::new();
        assert!(t.push(m.clone()));
        assert!(!t.push(m.clone()));
        assert_eq!(t.len(), 1);
        assert!(t.contains(m.id));
    }

    #[test]
    fn forgetting_the_oldest_keeps_the_newest_and_their_ids() {
        let all: Vec<Message> = (0..5).map(|i| Message::user(i.to_string())).collect();
        let mut t = Thread::from_messages(all.clone());
        assert_eq!(t.forget_oldest(7), 0);
        assert_eq!(t.forget_oldest(2), 3);
        let texts: Vec<String> = t
            .messages()
            .iter()
            .map(|m| m.text_content().into_owned())
            .collect();
        assert_eq!(texts, ["3", "4"]);
        assert!(!t.contains(all[0].id));
        assert!(t.contains(all[4].id));
        // Forgotten, it enters again; kept, it does not.
        assert!(t.push(all[0].clone()));
        assert!(!t.push(all[4].clone()));
    }

    #[test]
    fn ids_are_found_searched_and_indexed_alike() {
        let all: Vec<Message> = (0..3 * INDEXED_FROM)
            .map(|i| Message::user(i.to_string()))
            .collect();
        // Pushed in the order they were made (ascending ids): found by a
        // search, never indexed; pushed newest first: searched while
        // short, indexed past INDEXED_FROM.
        for newest_first in [false, true] {
            let order: Vec<&Message> = if newest_first {
                all.iter().rev().collect()
            } else {
                all.iter().collect()
            };
            let mut t = Thread::new();
            for (n, m) in order.iter().enumerate() {
                assert!(t.push((*m).clone()), "message {n} is new");
                // Every message held so far is refused again, the oldest
                // and the newest.
                assert!(!t.push(order[0].clone()) && !t.push((*m).clone()), "at {n}");
                assert!(order[..=n].iter().all(|m| t.contains(m.id)), "at {n}");
                assert!(order[n + 1..].iter().all(|m| !t.contains(m.id)), "at {n}");
                let indexed = (newest_first && t.len() > INDEXED_FROM).then_some(t.len());
                assert_eq!(t.ids.indexed(), indexed, "at {n}");
            }
            assert_eq!(t.len(), all.len());
            // Shrunk back to a search, then grown again.
            assert_eq!(t.forget_oldest(INDEXED_FROM - 1), 2 * INDEXED_FROM + 1);
            assert_eq!(t.ids.indexed(), None);
            assert!(!t.contains(order[0].id) && t.contains(order[order.len() - 1].id));
            for m in &order {
                t.push((*m).clone());
            }
            assert_eq!(t.len(), all.len());
            assert!(all.iter().all(|m| t.contains(m.id)));
        }
    }

    #[test]
    fn a_thread_refuses_exactly_the_ids_it_holds_whatever_their_order() {
        // Pushes from a pool of messages — mostly in the order they were
        // made, some older, some repeated — with the oldest let go now
        // and then, against a plain list of what the thread holds.
        let pool: Vec<Message> = (0..200).map(|i| Message::user(i.to_string())).collect();
        let mut rng = fastrand::Rng::with_seed(44);
        for _ in 0..50 {
            let mut t = Thread::new();
            let mut held: Vec<MessageId> = Vec::new();
            let mut next = 0;
            for _ in 0..120 {
                let m = match rng.u8(..10) {
                    0..=6 if next < pool.len() => {
                        next += 1;
                        &pool[next - 1]
                    }
                    _ => &pool[rng.usize(..pool.len())],
                };
                assert_eq!(t.push(m.clone()), !held.contains(&m.id));
                if !held.contains(&m.id) {
                    held.push(m.id);
                }
                if rng.u8(..20) == 0 {
                    let keep = rng.usize(..=held.len());
                    t.forget_oldest(keep);
                    held.drain(..held.len() - keep);
                }
                assert!(
                    pool.iter()
                        .all(|p| t.contains(p.id) == held.contains(&p.id))
                );
            }
        }
    }

    #[test]
    fn ids_made_elsewhere_or_out_of_order_are_still_found() {
        // Ids of another process (a checkpoint's) above this one's, and
        // messages pushed in no order of their ids: the bound shortcut
        // must never hide a repeat.
        let foreign: Vec<Message> = (0..3)
            .map(|i| {
                let mut m = Message::user(format!("f{i}"));
                m.id = MessageId(u128::MAX - i);
                m
            })
            .collect();
        let local: Vec<Message> = (0..3).map(|i| Message::user(i.to_string())).collect();
        for size in [1, INDEXED_FROM + 4] {
            let filler: Vec<Message> = (0..size).map(|i| Message::user(format!("x{i}"))).collect();
            let mut t = Thread::from_messages(filler);
            for m in foreign.iter().chain(local.iter().rev()) {
                assert!(t.push(m.clone()));
            }
            for m in foreign.iter().chain(&local) {
                assert!(
                    !t.push(m.clone()),
                    "{} repeated in {size}",
                    m.text_content()
                );
                assert!(t.contains(m.id));
            }
            assert_eq!(t.len(), size + 6);
        }
    }

    #[test]
    fn json_round_trip_rebuilds_ids() {
        let mut t = Thread::from_messages([Message::user("a"), Message::text("b", "c")]);
        t.children_mut().insert(
            "b".into(),
            Box::new(Thread::from_messages([Message::user("z")])),
        );
        *t.state_mut() = Some(WorkflowState {
            consumed: 2,
            ..Default::default()
        });
        let json = serde_json::to_string(&t).unwrap();
        let back: Thread = serde_json::from_str(&json).unwrap();
        assert_eq!(back, t);
        let first = back.messages()[0].as_ref().clone();
        let mut back = back;
        assert!(!back.push(first));
    }
}
