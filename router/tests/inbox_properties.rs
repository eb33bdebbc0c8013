//! Property tests: an inbox never delivers a message twice and never loses
//! one silently, whatever the configuration and sequence of operations.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use proptest::prelude::*;
use troupe_router::{
    DropReason, Dropped, Envelope, Inbox, InboxConfig, Overflow, Push, Readiness, SenderFilter,
};

const SENDERS: [&str; 3] = ["a", "b", "c"];

#[derive(Debug, Clone, PartialEq)]
struct Msg {
    id: u64,
    from: &'static str,
    at: SystemTime,
}

impl Envelope for Msg {
    fn sender(&self) -> &str {
        self.from
    }
    fn created_at(&self) -> SystemTime {
        self.at
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// A message from `SENDERS[from]`, created `age` seconds before now
    /// (negative: in the future).
    Push {
        from: usize,
        age: i64,
    },
    TakeBatch,
    TakeAll,
    Expire,
    Advance(u64),
    Readiness,
    SnapshotRestore,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..SENDERS.len(), -3i64..30).prop_map(|(from, age)| Op::Push { from, age }),
        3 => Just(Op::TakeBatch),
        1 => Just(Op::TakeAll),
        1 => Just(Op::Expire),
        3 => (0u64..15).prop_map(Op::Advance),
        2 => Just(Op::Readiness),
        1 => Just(Op::SnapshotRestore),
    ]
}

fn config() -> impl Strategy<Value = InboxConfig> {
    let senders = prop_oneof![
        Just(SenderFilter::Any),
        proptest::sample::subsequence(SENDERS.to_vec(), 0..=SENDERS.len())
            .prop_map(SenderFilter::only),
    ];
    let overflow = prop_oneof![
        Just(Overflow::DropOldest),
        Just(Overflow::DropNewest),
        Just(Overflow::Reject),
    ];
    (
        senders,
        1usize..4,
        proptest::option::of(0u64..20),
        proptest::option::of(0usize..5),
        overflow,
        proptest::option::of(0u64..10),
    )
        .prop_map(
            |(senders, batch_size, ttl, extra, overflow, max_wait)| InboxConfig {
                senders,
                batch_size,
                ttl: ttl.map(Duration::from_secs),
                capacity: extra.map(|e| batch_size + e),
                overflow,
                max_wait: max_wait.map(Duration::from_secs),
            },
        )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Taken,
    Filtered,
    Rejected,
    Dropped,
}

/// Records each message's fate, failing on a second one.
#[derive(Default)]
struct Ledger {
    fates: BTreeMap<u64, Fate>,
    last_taken: Option<u64>,
}

impl Ledger {
    fn record(&mut self, id: u64, fate: Fate) -> Result<(), TestCaseError> {
        if let Some(before) = self.fates.insert(id, fate) {
            return Err(TestCaseError::fail(format!(
                "message {id} reported twice: {before:?} then {fate:?}"
            )));
        }
        Ok(())
    }

    fn dropped(
        &mut self,
        dropped: &[Dropped<Msg>],
        config: &InboxConfig,
        now: SystemTime,
    ) -> Result<(), TestCaseError> {
        for d in dropped {
            match d.reason {
                DropReason::Expired { age, ttl } => {
                    prop_assert_eq!(Some(ttl), config.ttl);
                    prop_assert!(age > ttl);
                    prop_assert_eq!(age, now.duration_since(d.message.at).unwrap_or_default());
                }
                DropReason::Overflow { .. } => {
                    return Err(TestCaseError::fail("takes only drop expired messages"));
                }
            }
            self.record(d.message.id, Fate::Dropped)?;
        }
        Ok(())
    }

    fn taken(
        &mut self,
        messages: &[Msg],
        config: &InboxConfig,
        now: SystemTime,
    ) -> Result<(), TestCaseError> {
        for m in messages {
            if let Some(ttl) = config.ttl {
                prop_assert!(
                    now.duration_since(m.at).unwrap_or_default() <= ttl,
                    "took an expired message"
                );
            }
            // Ids rise with push order, so FIFO delivery means rising ids.
            prop_assert!(
                self.last_taken < Some(m.id),
                "out of order: {} after {:?}",
                m.id,
                self.last_taken
            );
            self.last_taken = Some(m.id);
            self.record(m.id, Fate::Taken)?;
        }
        Ok(())
    }
}

fn run(config: InboxConfig, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut inbox: Inbox<Msg> =
        Inbox::new(config.clone()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut ledger = Ledger::default();
    let mut now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let mut pushed = BTreeSet::new();
    let mut next_id = 0;

    for op in ops {
        match op {
            Op::Push { from, age } => {
                let id = next_id;
                next_id += 1;
                pushed.insert(id);
                let at = if age >= 0 {
                    now - Duration::from_secs(age.unsigned_abs())
                } else {
                    now + Duration::from_secs(age.unsigned_abs())
                };
                let from = SENDERS[from];
                let full = config.capacity.is_some_and(|c| inbox.len() >= c);
                let len_before = inbox.len();
                match inbox.push(Msg { id, from, at }, now) {
                    Push::Accepted => {
                        prop_assert!(config.senders.accepts(from));
                        prop_assert!(!full);
                        prop_assert_eq!(inbox.len(), len_before + 1);
                    }
                    Push::Filtered(m) => {
                        prop_assert!(!config.senders.accepts(from));
                        prop_assert_eq!(m.id, id);
                        ledger.record(id, Fate::Filtered)?;
                    }
                    Push::Rejected(m) => {
                        prop_assert!(full && config.overflow == Overflow::Reject);
                        prop_assert_eq!(m.id, id);
                        ledger.record(id, Fate::Rejected)?;
                    }
                    Push::AcceptedWithDrop(d) => {
                        prop_assert!(full && config.overflow == Overflow::DropOldest);
                        prop_assert_ne!(d.message.id, id);
                        let oldest = matches!(
                            d.reason,
                            DropReason::Overflow {
                                policy: Overflow::DropOldest,
                                ..
                            }
                        );
                        prop_assert!(oldest);
                        ledger.record(d.message.id, Fate::Dropped)?;
                    }
                    Push::Dropped(d) => {
                        prop_assert_eq!(d.message.id, id);
                        match d.reason {
                            DropReason::Expired { age, ttl } => {
                                prop_assert!(age > ttl);
                            }
                            DropReason::Overflow { policy, .. } => {
                                prop_assert!(full);
                                prop_assert_eq!(policy, Overflow::DropNewest);
                            }
                        }
                        ledger.record(id, Fate::Dropped)?;
                    }
                }
                if let Some(capacity) = config.capacity {
                    prop_assert!(inbox.len() <= capacity);
                }
            }
            Op::TakeBatch => {
                let readiness = inbox.readiness(now);
                let batch = inbox.take_batch(now);
                prop_assert!(batch.messages.len() <= config.batch_size);
                if readiness == Readiness::Ready {
                    prop_assert!(!batch.messages.is_empty());
                }
                if readiness == Readiness::Empty {
                    prop_assert!(batch.messages.is_empty());
                }
                ledger.dropped(&batch.dropped, &config, now)?;
                ledger.taken(&batch.messages, &config, now)?;
            }
            Op::TakeAll => {
                let batch = inbox.take_all(now);
                prop_assert!(inbox.is_empty());
                ledger.dropped(&batch.dropped, &config, now)?;
                ledger.taken(&batch.messages, &config, now)?;
            }
            Op::Expire => {
                let dropped = inbox.expire(now);
                ledger.dropped(&dropped, &config, now)?;
                if let Some(ttl) = config.ttl {
                    for m in inbox.iter() {
                        let age = now.duration_since(m.at).unwrap_or_default();
                        prop_assert!(age <= ttl, "{} expired but kept", m.id);
                    }
                }
            }
            Op::Advance(secs) => now += Duration::from_secs(secs),
            Op::Readiness => match inbox.readiness(now) {
                Readiness::Empty => {}
                Readiness::Ready => prop_assert!(!inbox.is_empty()),
                Readiness::Waiting { until } => {
                    prop_assert!(!inbox.is_empty());
                    prop_assert_eq!(until.is_some(), config.max_wait.is_some());
                    if let Some(until) = until {
                        prop_assert!(until > now);
                    }
                }
            },
            Op::SnapshotRestore => {
                let before: Vec<u64> = inbox.iter().map(|m| m.id).collect();
                inbox = Inbox::restore(config.clone(), inbox.snapshot())
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let after: Vec<u64> = inbox.iter().map(|m| m.id).collect();
                prop_assert_eq!(before, after);
            }
        }
    }

    // Nothing lost: every pushed message has exactly one fate or is still held.
    for m in inbox.iter() {
        prop_assert!(
            !ledger.fates.contains_key(&m.id),
            "{} both held and reported",
            m.id
        );
        ledger.record(m.id, Fate::Taken)?;
    }
    let accounted: BTreeSet<u64> = ledger.fates.keys().copied().collect();
    prop_assert_eq!(accounted, pushed);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn no_message_is_delivered_twice_or_lost(config in config(), ops in proptest::collection::vec(op(), 0..80)) {
        run(config, ops)?;
    }
}
