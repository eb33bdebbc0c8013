CREATE TABLE troupe_node_cache (
    key        text COLLATE "C" NOT NULL PRIMARY KEY,
    value      bytea NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
