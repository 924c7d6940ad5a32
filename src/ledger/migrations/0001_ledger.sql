-- The ledger (contract 12): every change of a transaction record, and every operator action of the
-- console's audit trail, in monthly partitions dropped whole after LEDGER_RETENTION_DAYS.
-- Amounts are numeric (exact decimals); player and site ids numeric(20,0) (exact up to 2^64-1);
-- transaction, round and session ids text. Partitions are made by the writer (src/ledger/partitions.ts).

-- One row per change, never updated: (wallet, transaction id, change number) names a change; the
-- record's creation time is the partition key, so every change of a record sits in its month.
-- A transaction id the engine repeats after Redis forgot it makes a new record: same id, another
-- created_at.
CREATE TABLE ledger_changes (
  wallet             text           NOT NULL,
  transaction_id     text           NOT NULL,
  change_no          integer        NOT NULL,
  created_at         timestamptz(3) NOT NULL,
  changed_at         timestamptz(3) NOT NULL,
  kind               text           NOT NULL,
  state              text           NOT NULL,
  amount             numeric        NOT NULL,
  currency           text           NOT NULL,
  player_id          numeric(20, 0) NOT NULL,
  site_id            numeric(20, 0) NOT NULL,
  session_id         text           NOT NULL,
  round_id           text           NOT NULL,
  wallet_round_id    text           NOT NULL,
  reference_id       text,
  is_compensation    boolean        NOT NULL,
  compensation_id    text,
  attempts           integer        NOT NULL,
  last_wallet_code   integer,
  wallet_request_id  text,
  engine_request_id  text,
  balance            numeric,
  error              jsonb,
  resolution         text,
  note               text,
  outbox_id          text           NOT NULL,
  written_at         timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (wallet, transaction_id, created_at, change_no)
) PARTITION BY RANGE (created_at);

-- The newest change of each record, for lists and filters (a projection of ledger_changes, moved
-- forward only: an older change replayed late never overwrites a newer one).
CREATE TABLE ledger_transactions (LIKE ledger_changes INCLUDING DEFAULTS, PRIMARY KEY (wallet, transaction_id, created_at))
  PARTITION BY RANGE (created_at);
CREATE INDEX ledger_transactions_newest ON ledger_transactions (created_at DESC, wallet DESC, transaction_id DESC);
CREATE INDEX ledger_transactions_player ON ledger_transactions (player_id, site_id, created_at DESC);
CREATE INDEX ledger_transactions_round ON ledger_transactions (wallet, round_id);
CREATE INDEX ledger_transactions_id ON ledger_transactions (transaction_id);

-- A transaction id the engine used again after Redis had forgotten its first record (a late
-- repeat): the gateway could not answer it from the first record, so it made a second. Listed for
-- an operator (GET /admin/api/history/late-repeats).
CREATE TABLE ledger_late_repeats (
  wallet              text           NOT NULL,
  transaction_id      text           NOT NULL,
  created_at          timestamptz(3) NOT NULL,
  earlier_created_at  timestamptz(3) NOT NULL,
  flagged_at          timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (wallet, transaction_id, created_at)
) PARTITION BY RANGE (created_at);

-- The console's audit trail: one row per operator action.
CREATE TABLE ledger_audit (
  wallet          text           NOT NULL,
  entry_id        text           NOT NULL,
  at              timestamptz(3) NOT NULL,
  operator        text           NOT NULL,
  action          text           NOT NULL,
  transaction_id  text           NOT NULL,
  target_id       text           NOT NULL,
  state_before    text           NOT NULL,
  state_after     text           NOT NULL,
  result          text           NOT NULL,
  note            text           NOT NULL,
  request_id      text           NOT NULL,
  PRIMARY KEY (wallet, entry_id, at)
) PARTITION BY RANGE (at);
CREATE INDEX ledger_audit_transaction ON ledger_audit (wallet, transaction_id);
