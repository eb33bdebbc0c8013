//! Unit tests of [`Inbox`]: sender filters, batches, readiness, expiry,
//! overflow policies and snapshots.

use super::*;
use std::time::Duration;

use crate::config::SenderFilter;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Msg {
    id: u32,
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

fn t(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

fn msg(id: u32, from: &'static str, at: u64) -> Msg {
    Msg {
        id,
        from,
        at: t(at),
    }
}

fn ids(messages: &[Msg]) -> Vec<u32> {
    messages.iter().map(|m| m.id).collect()
}

fn inbox(config: InboxConfig) -> Inbox<Msg> {
    Inbox::new(config).expect("valid config")
}

#[test]
fn filters_by_sender_and_hands_the_message_back() {
    let mut inbox = inbox(InboxConfig::new().senders(["a", "b"]));
    assert_eq!(inbox.push(msg(1, "a", 0), t(0)), Push::Accepted);
    assert_eq!(
        inbox.push(msg(2, "c", 0), t(0)),
        Push::Filtered(msg(2, "c", 0))
    );
    assert_eq!(inbox.push(msg(3, "b", 0), t(0)), Push::Accepted);
    assert_eq!(ids(&inbox.take_all(t(0)).messages), [1, 3]);
}

#[test]
fn any_filter_accepts_everyone() {
    let mut inbox = inbox(InboxConfig::new().senders(SenderFilter::Any));
    assert!(inbox.push(msg(1, "whoever", 0), t(0)).is_accepted());
}

#[test]
fn batch_size_bounds_a_take_in_fifo_order() {
    let mut inbox = inbox(InboxConfig::new().batch_size(2));
    for id in 1..=5 {
        assert!(inbox.push(msg(id, "a", 0), t(0)).is_accepted());
    }
    assert_eq!(ids(&inbox.take_batch(t(0)).messages), [1, 2]);
    assert_eq!(ids(&inbox.take_batch(t(0)).messages), [3, 4]);
    assert_eq!(ids(&inbox.take_batch(t(0)).messages), [5]);
    assert!(inbox.take_batch(t(0)).messages.is_empty());
}

#[test]
fn readiness_follows_batch_size() {
    let mut inbox = inbox(InboxConfig::new().batch_size(2));
    assert_eq!(inbox.readiness(t(0)), Readiness::Empty);
    let _ = inbox.push(msg(1, "a", 0), t(0));
    assert_eq!(inbox.readiness(t(100)), Readiness::Waiting { until: None });
    let _ = inbox.push(msg(2, "a", 0), t(0));
    assert_eq!(inbox.readiness(t(0)), Readiness::Ready);
}

#[test]
fn ttl_expiry_is_reported_with_its_reason() {
    let ttl = Duration::from_secs(60);
    let mut inbox = inbox(InboxConfig::new().batch_size(10).ttl(ttl));
    let _ = inbox.push(msg(1, "a", 0), t(0));
    let _ = inbox.push(msg(2, "a", 50), t(50));
    let _ = inbox.push(msg(3, "a", 10), t(55));

    // Not expired at exactly the ttl.
    assert!(inbox.expire(t(60)).is_empty());

    let batch = inbox.take_batch(t(100));
    assert_eq!(ids(&batch.messages), [2]);
    let dropped: Vec<_> = batch
        .dropped
        .iter()
        .map(|d| (d.message.id, d.reason))
        .collect();
    assert_eq!(
        dropped,
        [
            (
                1,
                DropReason::Expired {
                    age: Duration::from_secs(100),
                    ttl
                }
            ),
            (
                3,
                DropReason::Expired {
                    age: Duration::from_secs(90),
                    ttl
                }
            ),
        ]
    );
}

#[test]
fn expire_keeps_survivors_in_order() {
    let mut inbox = inbox(InboxConfig::new().ttl(Duration::from_secs(10)));
    for (id, at) in [(1, 5), (2, 0), (3, 6), (4, 1), (5, 7)] {
        let _ = inbox.push(msg(id, "a", at), t(at));
    }
    let dropped = inbox.expire(t(15));
    assert_eq!(
        dropped.iter().map(|d| d.message.id).collect::<Vec<_>>(),
        [2, 4]
    );
    assert_eq!(inbox.iter().map(|m| m.id).collect::<Vec<_>>(), [1, 3, 5]);
}

#[test]
fn a_message_expired_on_arrival_is_dropped() {
    let ttl = Duration::from_secs(1);
    let mut inbox = inbox(InboxConfig::new().ttl(ttl));
    let push = inbox.push(msg(1, "a", 0), t(5));
    assert_eq!(
        push,
        Push::Dropped(Dropped {
            message: msg(1, "a", 0),
            reason: DropReason::Expired {
                age: Duration::from_secs(5),
                ttl
            },
        })
    );
    assert!(inbox.is_empty());
}

#[test]
fn future_creation_time_counts_as_fresh() {
    let mut inbox = inbox(InboxConfig::new().ttl(Duration::from_secs(1)));
    assert!(inbox.push(msg(1, "a", 100), t(0)).is_accepted());
    assert!(inbox.expire(t(50)).is_empty());
}

#[test]
fn readiness_skips_expired_messages_without_purging() {
    let mut inbox = inbox(
        InboxConfig::new()
            .batch_size(2)
            .ttl(Duration::from_secs(10))
            .max_wait(Duration::from_secs(100)),
    );
    let _ = inbox.push(msg(1, "a", 0), t(0));
    let _ = inbox.push(msg(2, "a", 5), t(5));
    assert_eq!(inbox.readiness(t(5)), Readiness::Ready);
    // Message 1 expired: one live message left, waiting from its arrival.
    assert_eq!(
        inbox.readiness(t(12)),
        Readiness::Waiting {
            until: Some(t(105))
        }
    );
    assert_eq!(inbox.len(), 2);
    // Both expired: nothing to run, yet both still held until purged.
    assert_eq!(inbox.readiness(t(20)), Readiness::Empty);
    assert_eq!(inbox.len(), 2);
    let batch = inbox.take_batch(t(20));
    assert!(batch.messages.is_empty());
    assert_eq!(batch.dropped.len(), 2);
}

#[test]
fn drop_oldest_evicts_the_front() {
    let mut inbox = inbox(InboxConfig::new().capacity(2));
    let _ = inbox.push(msg(1, "a", 0), t(0));
    let _ = inbox.push(msg(2, "a", 0), t(0));
    let push = inbox.push(msg(3, "a", 0), t(0));
    assert_eq!(
        push,
        Push::AcceptedWithDrop(Dropped {
            message: msg(1, "a", 0),
            reason: DropReason::Overflow {
                capacity: 2,
                policy: Overflow::DropOldest
            },
        })
    );
    assert!(push.is_accepted());
    assert_eq!(inbox.iter().map(|m| m.id).collect::<Vec<_>>(), [2, 3]);
}

#[test]
fn drop_newest_drops_the_incoming_message() {
    let mut inbox = inbox(
        InboxConfig::new()
            .capacity(1)
            .overflow(Overflow::DropNewest),
    );
    let _ = inbox.push(msg(1, "a", 0), t(0));
    let push = inbox.push(msg(2, "a", 0), t(0));
    assert_eq!(
        push,
        Push::Dropped(Dropped {
            message: msg(2, "a", 0),
            reason: DropReason::Overflow {
                capacity: 1,
                policy: Overflow::DropNewest
            },
        })
    );
    assert_eq!(inbox.iter().map(|m| m.id).collect::<Vec<_>>(), [1]);
}

#[test]
fn reject_hands_the_message_back() {
    let mut inbox = inbox(InboxConfig::new().capacity(1).overflow(Overflow::Reject));
    let _ = inbox.push(msg(1, "a", 0), t(0));
    assert_eq!(
        inbox.push(msg(2, "a", 0), t(0)),
        Push::Rejected(msg(2, "a", 0))
    );
    let _ = inbox.take_batch(t(0));
    assert_eq!(inbox.push(msg(3, "a", 0), t(0)), Push::Accepted);
}

#[test]
fn max_wait_makes_a_partial_batch_ready() {
    let mut inbox = inbox(
        InboxConfig::new()
            .batch_size(3)
            .max_wait(Duration::from_secs(10)),
    );
    let _ = inbox.push(msg(1, "a", 0), t(100));
    let _ = inbox.push(msg(2, "a", 0), t(105));
    assert_eq!(
        inbox.readiness(t(109)),
        Readiness::Waiting {
            until: Some(t(110))
        }
    );
    assert_eq!(inbox.readiness(t(110)), Readiness::Ready);
    assert_eq!(ids(&inbox.take_batch(t(110)).messages), [1, 2]);
}

#[test]
fn max_wait_counts_from_the_earliest_arrival() {
    let mut inbox = inbox(
        InboxConfig::new()
            .batch_size(3)
            .max_wait(Duration::from_secs(10)),
    );
    let _ = inbox.push(msg(1, "a", 0), t(100));
    let _ = inbox.push(msg(2, "a", 0), t(50));
    assert_eq!(
        inbox.readiness(t(55)),
        Readiness::Waiting { until: Some(t(60)) }
    );
}

#[test]
fn take_all_flushes_regardless_of_batch_size() {
    let mut inbox = inbox(InboxConfig::new().batch_size(2).ttl(Duration::from_secs(5)));
    for id in 1..=3 {
        let _ = inbox.push(msg(id, "a", 10), t(10));
    }
    let _ = inbox.push(msg(4, "a", 0), t(4));
    let batch = inbox.take_all(t(10));
    assert_eq!(ids(&batch.messages), [1, 2, 3]);
    assert_eq!(batch.dropped.len(), 1);
    assert!(inbox.is_empty());
}

#[test]
fn snapshot_and_restore_round_trip() -> Result<(), InboxConfigError> {
    let config = InboxConfig::new()
        .batch_size(2)
        .max_wait(Duration::from_secs(3));
    let mut inbox = Inbox::new(config.clone())?;
    let _ = inbox.push(msg(1, "a", 0), t(7));
    let _ = inbox.push(msg(2, "b", 0), t(8));
    let snapshot = inbox.snapshot();
    assert_eq!(snapshot, [(msg(1, "a", 0), t(7)), (msg(2, "b", 0), t(8))]);

    let restored = Inbox::restore(config, snapshot)?;
    assert_eq!(restored.readiness(t(8)), inbox.readiness(t(8)));
    assert_eq!(restored.snapshot(), inbox.snapshot());
    Ok(())
}

#[test]
fn restore_checks_config_and_capacity() {
    let two = vec![(msg(1, "a", 0), t(0)), (msg(2, "a", 0), t(0))];
    let err =
        Inbox::restore(InboxConfig::new().capacity(1), two.clone()).expect_err("over capacity");
    assert_eq!(
        err,
        InboxConfigError::SnapshotExceedsCapacity {
            len: 2,
            capacity: 1
        }
    );
    let err = Inbox::restore(InboxConfig::new().batch_size(0), two).expect_err("invalid");
    assert_eq!(err, InboxConfigError::ZeroBatchSize);
}

#[test]
fn new_rejects_invalid_configs() {
    assert_eq!(
        Inbox::<Msg>::new(InboxConfig::new().capacity(0)).err(),
        Some(InboxConfigError::ZeroCapacity)
    );
}

#[test]
fn iter_len_and_config() {
    let mut inbox = inbox(InboxConfig::new().batch_size(4));
    let _ = inbox.push(msg(1, "a", 0), t(0));
    let _ = inbox.push(msg(2, "a", 0), t(0));
    assert_eq!(inbox.len(), 2);
    assert_eq!(inbox.iter().len(), 2);
    assert_eq!(inbox.iter().next_back().map(|m| m.id), Some(2));
    assert_eq!(inbox.config().batch_size, 4);
}

#[test]
fn inboxes_of_alike_participants_share_one_config() {
    // A fan-out: every worker hears the lead alone; the lead hears the user.
    let workers = ["w0", "w1", "w2"];
    let mut builder = crate::Router::builder().add_route("user", "lead");
    for w in workers {
        builder = builder.add_route("lead", w).output(w);
    }
    let router = builder
        .build(&["lead", "w0", "w1", "w2"])
        .expect("valid router");
    let config = |i: usize| router.inbox_config(i).expect("a participant");
    assert!(std::ptr::eq(config(1), config(2)) && std::ptr::eq(config(2), config(3)));
    assert!(!std::ptr::eq(config(0), config(1)), "the lead's differs");
    assert_eq!(config(0).senders, SenderFilter::only(["user"]));
    assert_eq!(config(3).senders, SenderFilter::only(["lead"]));
    // The inboxes a run makes share it too, and filter as it says.
    let mut inbox: Inbox<Msg> = router.inbox(2).expect("a participant");
    assert!(std::ptr::eq(inbox.config(), config(1)));
    assert!(inbox.push(msg(1, "lead", 0), t(0)).is_accepted());
    assert!(matches!(
        inbox.push(msg(2, "w0", 0), t(0)),
        Push::Filtered(_)
    ));
}
