-- Requests to the worker holding a run that wait for its reply: an answer
-- to a run's question, a double text's rollback, sent through another
-- worker. The worker holding the run takes a row (taken_by), carries it
-- out and writes its reply; the asker waits for the reply.
CREATE TABLE troupe_serve_asks (
    id       bigserial PRIMARY KEY,
    run_id   text COLLATE "C" NOT NULL,
    kind     text NOT NULL,
    payload  jsonb NOT NULL,
    asked_at timestamptz NOT NULL DEFAULT now(),
    taken_by text COLLATE "C",
    reply    jsonb
);
CREATE INDEX troupe_serve_asks_open ON troupe_serve_asks (run_id) WHERE taken_by IS NULL;
