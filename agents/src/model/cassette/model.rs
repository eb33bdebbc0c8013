//! Model calls through a cassette: recorded (a streamed answer as the
//! pieces it came in), or answered from the recording without calling the
//! model (a streamed one piece by piece, as it was recorded). The calling
//! agent's path and run come from the call's observer (a
//! [`ChatAgent`](crate::ChatAgent) gives its turn's); a call made without
//! one is keyed by the name the model was wrapped for.

use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use async_trait::async_trait;
use futures::StreamExt;

use super::matching::Recorded;
use super::tape::{Kind, Tape};
use super::{Cassette, Entry};
use crate::error::ModelError;
use crate::model::{
    CallObserver, ChatDelta, ChatModel, ChatRequest, ChatResponse, ChatStream, NoObserver, Pricing,
    StreamAccumulator, response_deltas,
};

impl Recorded for Entry {
    fn agent(&self) -> &str {
        &self.agent
    }
    fn call(&self) -> u64 {
        self.call
    }
    fn request(&self) -> serde_json::Value {
        self.request.clone()
    }
}

impl Cassette {
    /// `model` as agent `agent` calls it, through this cassette. Calls
    /// are keyed by the calling turn's path when the caller gives one
    /// (see the module's doc), else by `agent`.
    pub fn wrap(self: &Arc<Self>, agent: &str, model: Arc<dyn ChatModel>) -> Arc<dyn ChatModel> {
        Arc::new(CassetteModel {
            inner: model,
            agent: agent.to_string(),
            cassette: self.clone(),
        })
    }
}

/// A model behind a cassette, for one agent.
struct CassetteModel {
    inner: Arc<dyn ChatModel>,
    agent: String,
    cassette: Arc<Cassette>,
}

/// Where a call is made: the tape, the agent path, the call index, and
/// the request as recorded.
struct Site {
    tape: Arc<Tape>,
    path: String,
    call: u64,
    wire: serde_json::Value,
}

fn other(e: impl std::fmt::Display) -> ModelError {
    ModelError::Other(e.to_string())
}

impl CassetteModel {
    fn site(&self, request: &ChatRequest, observer: &dyn CallObserver) -> Result<Site, ModelError> {
        let path = observer
            .path()
            .filter(|p| !p.is_empty())
            .unwrap_or(&self.agent)
            .to_string();
        let tape = self.cassette.tape(observer.run_id()).map_err(other)?;
        let call = tape.take_index(Kind::Models, &path);
        let wire = serde_json::to_value(request)
            .map_err(|e| other(format!("cassette: cannot encode the request: {e}")))?;
        Ok(Site {
            tape,
            path,
            call,
            wire: self.cassette.redact(wire),
        })
    }

    /// The recorded entry answering the call at `site` (replaying).
    fn replayed(&self, site: &Site) -> Result<Option<Entry>, ModelError> {
        let Some((mode, recorded)) = &self.cassette.replay else {
            return Ok(None);
        };
        let entry = site
            .tape
            .pick(
                Kind::Models,
                &recorded.models,
                &site.path,
                &self.agent,
                site.call,
                &site.wire,
                *mode,
            )
            .map_err(ModelError::Other)?;
        Ok(Some(entry.clone()))
    }

    /// Writes the entry of the call at `site` (recording).
    fn write(
        &self,
        site: Site,
        started: SystemTime,
        t0: Instant,
        result: Result<&ChatResponse, String>,
        chunks: Option<Vec<ChatDelta>>,
    ) -> Result<(), ModelError> {
        let entry = Entry {
            agent: site.path,
            call: site.call,
            model: self.inner.model_name().to_string(),
            started_unix_s: started
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            latency_ms: t0.elapsed().as_secs_f64() * 1000.0,
            request: site.wire,
            usage: result.as_ref().ok().and_then(|r| r.usage),
            response: result.as_ref().ok().map(|r| (*r).clone()),
            error: result.err(),
            chunks,
        };
        site.tape
            .append(Kind::Models, &entry, &self.cassette.secrets())
            .map_err(other)
    }
}

/// What a recorded entry answers.
fn answer(entry: &Entry) -> Result<ChatResponse, ModelError> {
    match (&entry.response, &entry.error) {
        (Some(r), _) => Ok(r.clone()),
        (None, Some(e)) => Err(ModelError::Other(e.clone())),
        (None, None) => Err(ModelError::Other(format!(
            "cassette: agent `{}` call {} has neither a response nor an error",
            entry.agent, entry.call
        ))),
    }
}

#[async_trait]
impl ChatModel for CassetteModel {
    fn model_name(&self) -> &str {
        self.inner.model_name()
    }
    fn provider_name(&self) -> &str {
        self.inner.provider_name()
    }
    fn context_window(&self) -> Option<usize> {
        self.inner.context_window()
    }
    fn pricing(&self) -> Option<Pricing> {
        self.inner.pricing()
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.complete_observed(request, &NoObserver).await
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, ModelError> {
        self.stream_observed(request, &NoObserver).await
    }

    async fn complete_observed(
        &self,
        request: &ChatRequest,
        observer: &dyn CallObserver,
    ) -> Result<ChatResponse, ModelError> {
        let site = self.site(request, observer)?;
        if let Some(entry) = self.replayed(&site)? {
            observer.attempt_started(1);
            return answer(&entry);
        }
        let started = SystemTime::now();
        let t0 = Instant::now();
        let result = self.inner.complete_observed(request, observer).await;
        let seen = result.as_ref().map_err(ToString::to_string);
        self.write(site, started, t0, seen, None)?;
        result
    }

    async fn stream_observed(
        &self,
        request: &ChatRequest,
        observer: &dyn CallObserver,
    ) -> Result<ChatStream, ModelError> {
        let site = self.site(request, observer)?;
        if let Some(entry) = self.replayed(&site)? {
            observer.attempt_started(1);
            let deltas = match &entry.chunks {
                Some(chunks) => chunks.clone(),
                None => response_deltas(&answer(&entry)?),
            };
            return Ok(Box::pin(futures::stream::iter(deltas.into_iter().map(Ok))));
        }
        let started = SystemTime::now();
        let t0 = Instant::now();
        let stream = match self.inner.stream_observed(request, observer).await {
            Ok(s) => s,
            Err(e) => {
                self.write(site, started, t0, Err(e.to_string()), None)?;
                return Err(e);
            }
        };
        // Each piece is kept as it passes; the entry is written when the
        // stream ends (a stream dropped before its end records nothing).
        let recorder = Arc::new(Mutex::new(Some(Recording {
            model: self.clone_handle(),
            site,
            started,
            t0,
            chunks: Vec::new(),
            acc: StreamAccumulator::new(),
        })));
        let tail = recorder.clone();
        let pieces = stream.map(move |item| {
            let mut guard = recorder.lock().unwrap_or_else(|p| p.into_inner());
            match (&item, guard.as_mut()) {
                (Ok(delta), Some(r)) => {
                    r.chunks.push(delta.clone());
                    r.acc.push(delta.clone());
                }
                (Err(e), Some(_)) => {
                    if let Some(r) = guard.take()
                        && let Err(failed) = r.finish(Err(e.to_string()))
                    {
                        return Err(failed);
                    }
                }
                (_, None) => {}
            }
            item
        });
        let end = futures::stream::once(async move {
            let r = tail.lock().unwrap_or_else(|p| p.into_inner()).take();
            match r {
                Some(r) => r.finish(Ok(())).err(),
                None => None,
            }
        })
        .filter_map(|e| async move { e.map(Err) });
        Ok(Box::pin(pieces.chain(end)))
    }
}

impl CassetteModel {
    fn clone_handle(&self) -> CassetteModel {
        CassetteModel {
            inner: self.inner.clone(),
            agent: self.agent.clone(),
            cassette: self.cassette.clone(),
        }
    }
}

/// A streamed call being recorded.
struct Recording {
    model: CassetteModel,
    site: Site,
    started: SystemTime,
    t0: Instant,
    chunks: Vec<ChatDelta>,
    acc: StreamAccumulator,
}

impl Recording {
    /// Writes the call: its answer put together from the pieces, or the
    /// error it ended with.
    fn finish(self, end: Result<(), String>) -> Result<(), ModelError> {
        let response = self.acc.finish();
        let result = match end {
            Ok(()) => Ok(&response),
            Err(e) => Err(e),
        };
        self.model
            .write(self.site, self.started, self.t0, result, Some(self.chunks))
    }
}
