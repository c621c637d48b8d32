# ruff: noqa: E501 (conversation text, one message per line)
"""A 50-exchange working session with an assistant, for the turn-by-turn token benchmark.

Written as a realistic afternoon of a developer's chat (debugging a service, SQL, a
deploy, a code review, an email): 42 user turns are tasks only, 8 say something about
the user (marked ``True``). Assistant answers are of ordinary length (40-120 words).
"""

from __future__ import annotations

SESSION: tuple[tuple[bool, str, str], ...] = (
    (
        False,
        'My FastAPI endpoint returns 422 when I post this JSON: {"amount": "12.5"}. The model has amount: Decimal. Why?',
        "Pydantic v2 in strict mode will not coerce a string to Decimal. Either send a number, or make the field `amount: Decimal = Field(strict=False)`, or add a `field_validator('amount', mode='before')` that converts strings. Check whether you enabled `model_config = ConfigDict(strict=True)` on a base model; that is the usual cause when it worked before.",
    ),
    (
        False,
        "yes there's a strict base model. how do I turn it off for one field only?",
        'Keep strict on the model and relax the field: `amount: Annotated[Decimal, Field(strict=False)]`. Field-level strict overrides the model setting, so only this field accepts the string form. Add a test that posts both "12.5" and 12.5 so the behaviour stays pinned.',
    ),
    (
        True,
        "Thanks. For context I'm the only backend dev at a 12-person logistics startup, so I end up owning everything from the API to the database.",
        "That explains the breadth of questions. With everything on you, favour boring defaults: one Postgres, managed if you can, migrations in CI, structured logs, and alerts only on symptoms users feel. I'll keep suggestions pragmatic for a team of one.",
    ),
    (
        False,
        "Write a SQL query that finds shipments delivered more than 2 days after the promised date, grouped by carrier, for last month.",
        "SELECT carrier_id, COUNT(*) AS late, AVG(delivered_at - promised_at) AS avg_delay FROM shipments WHERE delivered_at > promised_at + INTERVAL '2 days' AND delivered_at >= date_trunc('month', now()) - INTERVAL '1 month' AND delivered_at < date_trunc('month', now()) GROUP BY carrier_id ORDER BY late DESC;",
    ),
    (
        False,
        "It's slow, 14 seconds. EXPLAIN shows a seq scan on shipments (40M rows).",
        "Add an index that matches the filter: CREATE INDEX CONCURRENTLY shipments_delivered_idx ON shipments (delivered_at) INCLUDE (carrier_id, promised_at); The range on delivered_at then uses the index, and INCLUDE avoids heap lookups for the other columns. Run ANALYZE afterwards so the planner picks it up.",
    ),
    (
        False,
        "Index is building. Meanwhile, how do I make the query not lock the table in prod?",
        "A SELECT never blocks writers in Postgres, so the query itself is fine. The index build is what could block: CONCURRENTLY avoids the write lock but takes longer and cannot run in a transaction block. If it fails midway, drop the INVALID index and retry.",
    ),
    (
        False,
        "ok it's 120ms now. Next: our Celery workers keep dying with 'WorkerLostError: Worker exited prematurely: signal 9'.",
        "Signal 9 is almost always the kernel's OOM killer. Check dmesg or your container's OOMKilled status. Lower worker_concurrency, set worker_max_tasks_per_child so leaks are recycled, and set worker_max_memory_per_child to restart a child above a memory threshold.",
    ),
    (
        False,
        "dmesg confirms OOM. The task loads a whole CSV into pandas, files are up to 2GB.",
        "Stream it: pd.read_csv(path, chunksize=100_000) and process chunk by chunk, or use polars' scan_csv for a lazy plan. Specify dtypes up front (category for repeated strings) to cut memory by half or more.",
    ),
    (
        True,
        "Please keep answers short like that last one, I read these between meetings and long explanations lose me.",
        "Will do: short answers, details only when you ask.",
    ),
    (
        False,
        "chunksize works. Now the task takes 9 minutes instead of 3. Any quick win?",
        "Profile one chunk first. Usual wins: avoid apply with Python functions (vectorise), read only needed columns with usecols, and write results in bulk (COPY) instead of row inserts.",
    ),
    (
        False,
        "usecols cut it to 4 minutes. How do I do COPY from pandas into Postgres with psycopg 3?",
        "with conn.cursor().copy('COPY target (a, b, c) FROM STDIN') as copy: for row in df.itertuples(index=False): copy.write_row(row). It streams rows without building SQL strings.",
    ),
    (
        False,
        "Getting 'psycopg.errors.BadCopyFileFormat: extra data after last expected column'.",
        "Your DataFrame has more columns than the COPY column list. Select them explicitly: df[['a', 'b', 'c']].itertuples(index=False).",
    ),
    (
        False,
        "fixed. Can you review this function?\n```python\ndef retry(fn, n=3):\n    for i in range(n):\n        try:\n            return fn()\n        except Exception:\n            time.sleep(2 ** i)\n```",
        "Two issues: after the last attempt it returns None silently instead of raising, and it retries every exception, including bugs like TypeError. Re-raise on the last attempt and catch only the transient errors you expect (timeouts, connection errors).",
    ),
    (
        False,
        "rewrite it with those fixes",
        "def retry(fn, n=3, errors=(TimeoutError, ConnectionError)):\n    for i in range(n):\n        try:\n            return fn()\n        except errors:\n            if i == n - 1:\n                raise\n            time.sleep(2 ** i)",
    ),
    (
        False,
        "What's the difference between TimeoutError and socket.timeout in 3.11?",
        "Since Python 3.10, socket.timeout is an alias of TimeoutError, so catching TimeoutError covers both.",
    ),
    (
        True,
        "Good to know. We're on Python 3.11 everywhere and deploy with Docker on a single Hetzner box, by the way.",
        "Noted: Python 3.11, Docker, one Hetzner server. That rules out managed-cloud-only suggestions.",
    ),
    (
        False,
        "How do I get zero-downtime deploys with docker compose on one server?",
        "Run two replicas behind a reverse proxy (Caddy or Traefik), update one at a time with health checks, or use docker rollout (a compose plugin) that starts the new container, waits for health, then stops the old one.",
    ),
    (
        False,
        "Caddy config for two upstreams with health checks?",
        "reverse_proxy api1:8000 api2:8000 {\n  health_uri /healthz\n  health_interval 5s\n  lb_policy round_robin\n}",
    ),
    (
        False,
        "Traceback when the new container starts:\nsqlalchemy.exc.OperationalError: (psycopg.OperationalError) connection refused\nis the db not ready?",
        "Yes: the app starts before Postgres accepts connections. Add a healthcheck to the db service (pg_isready) and depends_on: db: condition: service_healthy on the app.",
    ),
    (
        False,
        "that worked. Different topic: write a polite email to a carrier asking for the missing tracking data from last week.",
        "Subject: Missing tracking data for last week's shipments\n\nHello,\n\nWe noticed that tracking events for shipments handed over between 3 and 9 November are missing from the feed. Could you check and resend them, or let us know when they will be available?\n\nThank you,\n[Name]",
    ),
    (
        False,
        "make it a bit firmer, this is the third time",
        "Hello,\n\nThis is the third time tracking data has been missing from your feed, now for 3-9 November. We need the complete events by Friday to reconcile deliveries with our customers. Please confirm when they will be resent and what you are changing to prevent this.\n\nRegards,\n[Name]",
    ),
    (
        True,
        "Perfect tone. I usually write to carriers in German though, most of them are in Hamburg. Can you translate it?",
        "Hallo,\n\nzum dritten Mal fehlen Tracking-Daten in Ihrem Feed, diesmal für den 3. bis 9. November. Wir benötigen die vollständigen Ereignisse bis Freitag ... Mit freundlichen Grüßen",
    ),
    (
        False,
        "Now a regex to pull tracking numbers like DE123456789HH out of free text.",
        r"\bDE\d{9}[A-Z]{2}\b — add re.IGNORECASE if carriers write them in lower case.",
    ),
    (
        False,
        "How do I test that regex with pytest parametrize?",
        "@pytest.mark.parametrize('text,expected', [('ref DE123456789HH ok', ['DE123456789HH']), ('none here', [])])\ndef test_tracking(text, expected):\n    assert TRACKING.findall(text) == expected",
    ),
    (
        False,
        "pytest says 'fixture text not found'",
        "The parameter names must be one comma-separated string or a tuple: @pytest.mark.parametrize(('text', 'expected'), [...]). Check you did not write them as two separate arguments.",
    ),
    (
        False,
        "What's a good way to store money amounts in Postgres?",
        "numeric(12, 2) for fixed currency amounts, or bigint in the smallest unit (cents) if you do a lot of arithmetic. Never float.",
    ),
    (
        False,
        "Migration to change a float column to numeric without downtime on 40M rows?",
        "Add a new numeric column, backfill in batches (UPDATE ... WHERE id BETWEEN ...), write to both from the app, then switch reads, then drop the old column. A direct ALTER TYPE rewrites the table under an exclusive lock.",
    ),
    (
        True,
        "Makes sense. I'm planning to move us to managed Postgres next quarter once we raise the seed round, so I'd rather not over-engineer this now.",
        "Then keep it simple: do the batched backfill now, and leave replication or partitioning to the managed setup.",
    ),
    (
        False,
        "Batch size for the backfill?",
        "Start with 10,000 rows per UPDATE and a short sleep between batches; watch replication lag and autovacuum. Increase while lock waits stay near zero.",
    ),
    (
        False,
        "How do I watch lock waits?",
        "SELECT pid, wait_event_type, wait_event, query FROM pg_stat_activity WHERE wait_event_type = 'Lock'; and log_lock_waits = on to log waits longer than deadlock_timeout.",
    ),
    (
        False,
        "Explain the difference between autovacuum and VACUUM FULL in two sentences.",
        "Autovacuum marks dead rows reusable in the background without blocking normal work. VACUUM FULL rewrites the whole table to return space to the OS and holds an exclusive lock while it does.",
    ),
    (
        False,
        "Grafana panel for p95 latency from Prometheus histogram http_request_duration_seconds?",
        "histogram_quantile(0.95, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))",
    ),
    (
        False,
        "And split by route?",
        "histogram_quantile(0.95, sum by (le, route) (rate(http_request_duration_seconds_bucket[5m])))",
    ),
    (
        False,
        "Prometheus is eating 8GB RAM, too many series?",
        "Probably high-cardinality labels: a label with user ids, full URLs or request ids. Check prometheus_tsdb_head_series and topk(10, count by (__name__)({__name__=~'.+'})). Drop or relabel the offending label.",
    ),
    (
        False,
        "Found it, a label with the full URL. How to relabel it away?",
        "In the scrape config: metric_relabel_configs: - regex: url\n  action: labeldrop. Better: fix the instrumentation to use the route template instead of the URL.",
    ),
    (
        True,
        "Btw I'm colourblind (red-green), so please avoid describing dashboards by red/green colours.",
        "Understood. I'll refer to panels by name and thresholds instead of colours.",
    ),
    (
        False,
        "Suggest a colour-safe palette for Grafana thresholds.",
        "Blue for normal, orange for warning, and a dark purple or black for critical, plus text labels or icons so colour is never the only cue. Viridis-style palettes work well.",
    ),
    (
        False,
        "Write a bash script that backs up the Postgres db to S3 nightly.",
        '#!/usr/bin/env bash\nset -euo pipefail\nstamp=$(date +%F)\npg_dump -Fc "$DATABASE_URL" | aws s3 cp - "s3://backups/db-$stamp.dump"\n# cron: 0 3 * * * /opt/backup.sh',
    ),
    (
        False,
        "Hetzner has S3-compatible storage, does that script need changes?",
        "Only the endpoint: add --endpoint-url https://<region>.your-objectstorage.com to aws s3 cp, with the keys of the Hetzner bucket in the environment.",
    ),
    (
        False,
        "How do I test restoring it?",
        "Restore into a scratch database regularly: createdb restore_test && aws s3 cp s3://backups/db-<date>.dump - | pg_restore -d restore_test, then run a few sanity queries. An untested backup is not a backup.",
    ),
    (
        False,
        "ok. Summarise what we changed today in 5 bullets for my standup notes.",
        "- Relaxed strict Decimal parsing for amount\n- Indexed shipments.delivered_at (14 s → 120 ms)\n- Streamed CSV imports and bulk COPY (OOM fixed, 9 → 4 min)\n- Zero-downtime deploys with two replicas behind Caddy\n- Prometheus label cardinality fix and nightly backups to object storage",
    ),
    (
        True,
        "Nice. From now on end longer answers with a one-line summary, I paste those into my notes.",
        "Will do: longer answers get a one-line summary at the end.",
    ),
    (
        False,
        "What's the difference between a covering index and a composite index?",
        "A composite index has several key columns used for searching and sorting; a covering index also stores extra columns (INCLUDE) so the query is answered from the index alone. Summary: composite = search keys, covering = no table lookup.",
    ),
    (
        False,
        "Can a partial index help the late-shipments query?",
        "Only if you filter on a fixed condition, e.g. WHERE status = 'delivered'. A partial index on that condition is smaller and faster. Summary: partial indexes fit fixed filters.",
    ),
    (
        False,
        "Write the partial index then.",
        "CREATE INDEX CONCURRENTLY shipments_delivered_partial ON shipments (delivered_at) INCLUDE (carrier_id, promised_at) WHERE status = 'delivered';",
    ),
    (
        False,
        "will the planner use it for my query?",
        "Only if the query has the same WHERE status = 'delivered' condition; add it to the query. Summary: the query must imply the index predicate.",
    ),
    (
        False,
        "Quick: how do I list indexes with their sizes?",
        "SELECT indexrelname, pg_size_pretty(pg_relation_size(indexrelid)) FROM pg_stat_user_indexes ORDER BY pg_relation_size(indexrelid) DESC;",
    ),
    (
        False,
        "The old index is now unused. Safe to drop?",
        "Check idx_scan in pg_stat_user_indexes over a full business cycle first; if it stays 0, DROP INDEX CONCURRENTLY. Summary: verify zero scans, then drop concurrently.",
    ),
    (
        True,
        "Dropped. I'm off on parental leave from next Friday for three weeks, so I need a handover doc for the contractor covering the deploy and backups.",
        "Here is a handover outline: access and accounts, how to deploy (compose + Caddy rollout), backups and restore test, monitoring and alerts, known issues, and who to call. Summary: six sections, deploy and backups first.",
    ),
    (
        False,
        "Expand the deploy section with the exact commands.",
        "1. ssh deploy@host\n2. cd /srv/app && git pull\n3. docker compose build api\n4. docker rollout api\n5. curl -f https://api.example.com/healthz\nRollback: git checkout <previous tag> and repeat 3-5. Summary: pull, build, rollout, health check.",
    ),
)
