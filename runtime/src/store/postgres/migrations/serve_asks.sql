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

-- A2A push notification configs by task, so the worker holding a task
-- (the one it started on, or the one that took it over) delivers them,
-- whichever worker they were created through.
CREATE TABLE troupe_serve_push (
    task_id    text COLLATE "C" NOT NULL,
    config_id  text COLLATE "C" NOT NULL,
    config     jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_id, config_id)
);
