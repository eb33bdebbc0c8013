//! What a node knows of its connections, kept up to date by
//! `ractor_cluster`'s node events: the peers connected now, and the outcome
//! of a connect under way.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use ractor::ActorId;
use ractor_cluster::NodeEventSubscription;
use ractor_cluster::node::NodeServerSessionInformation;
use tokio::sync::Notify;

use crate::ClusterError;

/// A connected peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// Its node name (`b`).
    pub name: String,
    /// Its full name in `ractor_cluster` (`b@127.0.0.1`).
    pub full_name: String,
    /// The address of the connection (its listening address when this
    /// node connected to it).
    pub addr: String,
    /// Whether the peer connected to this node (rather than the reverse).
    pub inbound: bool,
}

/// Locks `m`, poisoned or not.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a panic elsewhere mid-update of plain
    // bookkeeping; the data is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What this node knows of its connections, kept up to date by
/// `ractor_cluster`'s node events.
#[derive(Default)]
pub(crate) struct Sessions {
    table: Mutex<Table>,
    /// Woken whenever the table changes.
    pub(crate) changed: Notify,
}

#[derive(Default)]
struct Table {
    seq: u64,
    live: HashMap<ActorId, Session>,
    /// Recently closed sessions, for connects waiting on their outcome.
    closed: VecDeque<Session>,
}

#[derive(Debug, Clone)]
struct Session {
    seq: u64,
    peer_addr: String,
    inbound: bool,
    peer: Option<String>,
    ready: bool,
}

impl Session {
    fn info(&self) -> Option<PeerInfo> {
        let full = self.peer.clone()?;
        Some(PeerInfo {
            name: full.split('@').next().unwrap_or(&full).to_string(),
            full_name: full,
            addr: self.peer_addr.clone(),
            inbound: self.inbound,
        })
    }
}

impl Sessions {
    pub(crate) fn seq(&self) -> u64 {
        lock(&self.table).seq
    }

    fn update(&self, ses: &NodeServerSessionInformation, f: impl FnOnce(&mut Table, ActorId)) {
        let id = ses.actor.get_id();
        f(&mut lock(&self.table), id);
        self.changed.notify_waiters();
    }

    /// The outcome of a connect begun after `since` to `wanted`, if known.
    pub(crate) fn outcome(
        &self,
        since: u64,
        wanted: &str,
        addr: &str,
    ) -> Option<Result<PeerInfo, ClusterError>> {
        let t = lock(&self.table);
        let mine = |s: &&Session| s.seq > since && !s.inbound && s.peer_addr == wanted;
        if let Some(s) = t.live.values().find(mine)
            && s.ready
        {
            return s.info().map(Ok);
        }
        let closed = t.closed.iter().find(mine)?;
        // Both sides connecting at once: ractor_cluster keeps one of the
        // two connections, which need not be this one.
        if let Some(peer) = &closed.peer
            && let Some(other) = t
                .live
                .values()
                .find(|s| s.ready && s.peer.as_ref() == Some(peer))
        {
            return other.info().map(Ok);
        }
        Some(Err(ClusterError::AuthRefused {
            addr: addr.to_string(),
            peer: closed.info().map(|p| p.name),
        }))
    }

    pub(crate) fn is_connected(&self, full_name: &str) -> bool {
        lock(&self.table)
            .live
            .values()
            .any(|s| s.ready && s.peer.as_deref() == Some(full_name))
    }

    pub(crate) fn peers(&self) -> Vec<PeerInfo> {
        let mut out: Vec<PeerInfo> = lock(&self.table)
            .live
            .values()
            .filter(|s| s.ready)
            .filter_map(Session::info)
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }
}

/// Receives `ractor_cluster`'s node events (synchronously, inside its
/// node server: only bookkeeping here).
pub(crate) struct Subscription(pub(crate) Arc<Sessions>);

fn peer_name(ses: &NodeServerSessionInformation) -> Option<String> {
    ses.peer_name.as_ref().map(|n| n.name.clone())
}

impl NodeEventSubscription for Subscription {
    fn node_session_opened(&self, ses: NodeServerSessionInformation) {
        self.0.update(&ses, |t, id| {
            t.seq += 1;
            let seq = t.seq;
            t.live.insert(
                id,
                Session {
                    seq,
                    peer_addr: ses.peer_addr.clone(),
                    inbound: ses.is_server,
                    peer: peer_name(&ses),
                    ready: false,
                },
            );
        });
    }

    fn node_session_authenticated(&self, ses: NodeServerSessionInformation) {
        self.0.update(&ses, |t, id| {
            if let Some(s) = t.live.get_mut(&id) {
                s.peer = peer_name(&ses).or(s.peer.take());
            }
        });
    }

    fn node_session_ready(&self, ses: NodeServerSessionInformation) {
        self.0.update(&ses, |t, id| {
            if let Some(s) = t.live.get_mut(&id) {
                s.peer = peer_name(&ses).or(s.peer.take());
                s.ready = true;
            }
        });
    }

    fn node_session_disconnected(&self, ses: NodeServerSessionInformation) {
        self.0.update(&ses, |t, id| {
            if let Some(mut s) = t.live.remove(&id) {
                s.peer = peer_name(&ses).or(s.peer.take());
                if !s.ready && s.inbound {
                    tracing::warn!(
                        "refused a connection from {} during authentication (wrong cookie?)",
                        s.peer_addr
                    );
                }
                t.closed.push_back(s);
                while t.closed.len() > 64 {
                    t.closed.pop_front();
                }
            }
        });
    }
}
