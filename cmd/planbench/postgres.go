package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/planserver/planserver/internal/db"
)

// The PostgreSQL scenarios (-postgres URL, or PLANSERVER_BENCH_POSTGRES):
// the conditional PUT through one, two and three replicas of one database
// against the fastest raw pgx shape of the same durable work (rawshapes.go)
// taken in the same run, GET
// through three replicas, the write transaction under the advisory lock
// against SERIALIZABLE with retries and against row locks without the
// global lock, and the delay from a commit on one replica to its delivery
// on another's event stream. Each scenario gets a database of its own on
// the server, dropped at the end. Figures depend on the server's settings:
// measure with fsync on (PLANSERVER_PG_DURABLE=1 .ci/postgres make bench).

// pgBench creates and drops the benchmark's databases on one server.
type pgBench struct {
	admin *pgx.Conn
	base  *url.URL
	tag   string
	made  []string
}

func newPGBench(ctx context.Context, adminURL string) (*pgBench, error) {
	u, err := url.Parse(adminURL)
	if err != nil {
		return nil, fmt.Errorf("-postgres: %w", err)
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return nil, fmt.Errorf("-postgres %s: %w", db.Redact(adminURL), err)
	}
	var r [3]byte
	_, _ = rand.Read(r[:])
	return &pgBench{admin: conn, base: u, tag: hex.EncodeToString(r[:])}, nil
}

// database creates a database for one scenario and returns its URL.
func (b *pgBench) database(ctx context.Context, name string) (string, error) {
	full := "planbench_" + name + "_" + b.tag
	if _, err := b.admin.Exec(ctx, `CREATE DATABASE `+full+` TEMPLATE template0 ENCODING 'UTF8'`); err != nil {
		return "", fmt.Errorf("create database %s: %w", full, err)
	}
	b.made = append(b.made, full)
	u := *b.base
	u.Path = "/" + full
	return u.String(), nil
}

func (b *pgBench) close() {
	for _, name := range b.made {
		_, _ = b.admin.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
	}
	_ = b.admin.Close(context.Background())
}

// postgresSections runs the sections on PostgreSQL that -only asks for
// (raw, postgres, isolation) on one server, each scenario on a database of
// its own.
func (b *bench) postgresSections(ctx context.Context) error {
	pg, err := newPGBench(ctx, b.o.postgres)
	if err != nil {
		return err
	}
	defer pg.close()
	var version string
	if err := pg.admin.QueryRow(ctx, `SELECT current_setting('server_version') || ', fsync ' || current_setting('fsync') || ', synchronous_commit ' || current_setting('synchronous_commit')`).Scan(&version); err != nil {
		return err
	}
	b.notes = append(b.notes, "PostgreSQL "+version)
	if b.o.runs("raw") {
		if err := b.rawSection(ctx, pg); err != nil {
			return fmt.Errorf("raw shapes: %w", err)
		}
	}
	if b.o.runs("postgres") {
		if err := b.benchPostgres(ctx, pg); err != nil {
			return fmt.Errorf("PostgreSQL scenarios: %w", err)
		}
	}
	if b.o.runs("isolation") {
		if err := b.isolation(ctx, pg); err != nil {
			return fmt.Errorf("isolation experiment: %w", err)
		}
	}
	return nil
}

// benchPostgres is the postgres section: PUT through 1, 2 and 3 replicas
// against the raw baseline (rawShapes[postgresBaseline]), GET through 3
// against chi, the commit-to-stream delay, and 3 replicas against 1.
func (b *bench) benchPostgres(ctx context.Context, pg *pgBench) error {
	raw, closeRaw, err := b.rawBaseline(ctx, pg)
	if err != nil {
		return err
	}
	defer closeRaw()
	for n := 1; n <= 3; n++ {
		put, srvs, err := b.putOnReplicas(ctx, pg, fmt.Sprintf("put%d", n), n)
		if err != nil {
			return err
		}
		bases := basesOf(srvs)
		b.compare(ctx, put, raw)
		b.notes = append(b.notes, lockFigures(b.c, bases, n))
		if n == 3 {
			var get side
			var size int
			if get, size, err = b.getPlan(nil, bases); err == nil {
				get.name = fmt.Sprintf("GET /v1/plans/{name} (%d B, PostgreSQL, 3 replicas)", size)
				get.proc, get.replicas, get.profile = srvs[0], srvs[1:], "pg-get-plan"
				b.compare(ctx, get, chiSide(b.c, b.chi, "GET", size, ""))
				b.note("commit-to-stream delay across replicas")
				var lines []string
				if lines, err = notifyDelay(ctx, b.c, srvs[0].base, srvs[1].base, 400); err == nil {
					b.notes = append(b.notes, lines...)
				}
			}
		}
		stopAll(srvs)
		if err != nil {
			return err
		}
	}

	if err := b.replicasAgainstOne(ctx, pg); err != nil {
		return err
	}
	return b.stepMovesAgainstOne(ctx, pg)
}

// isolation is the isolation section: planserver's write transaction in
// raw pgx under the advisory lock against SERIALIZABLE with retries and
// against row locks (isolationExperiment).
func (b *bench) isolation(ctx context.Context, pg *pgBench) error {
	// Writers: one per replica, as planserver runs (each replica's
	// committer holds one connection), and one per client connection.
	// Each shape is compared with the advisory lock, planserver's choice.
	for _, writers := range []int{3, b.o.concurrency} {
		var sides [len(writeShapes)]side
		var retries [len(writeShapes)]*atomic.Int64
		for k, shape := range writeShapes {
			dsn, err := pg.database(ctx, fmt.Sprintf("iso_%d_%d", writers, k))
			if err != nil {
				return err
			}
			d, err := db.Open(ctx, dsn, db.Options{})
			if err != nil {
				return err
			}
			_, _, err = d.MigrateUp(ctx, nil)
			d.Close()
			if err != nil {
				return err
			}
			s, r, closeIso, err := isolationExperiment(ctx, writers, dsn, shape)
			if err != nil {
				return err
			}
			defer closeIso()
			sides[k], retries[k] = s, r
		}
		for k := 1; k < len(writeShapes); k++ {
			b.compare(ctx, sides[k], sides[0])
			if writeShapes[k] != serializableRetry {
				continue
			}
			committed := 0
			for _, r := range b.rows[len(b.rows)-1].runs {
				committed += r.requests - r.errors
			}
			b.notes = append(b.notes, fmt.Sprintf("SERIALIZABLE, %d writers: %d serialization failures retried for %d commits (%.2f per commit)",
				writers, retries[k].Load(), committed, float64(retries[k].Load())/float64(max(1, committed))))
		}
	}
	return nil
}

// replicasAgainstOne measures issue 27's "writes never slow down as
// replicas are added" as one comparison: PUT through 3 replicas against
// PUT through 1, both sets serving at once on databases of their own and
// their rounds interleaved, so that a change in the machine's speed during
// the run moves both sides alike. (The rows above run each set against the
// raw upsert at a different time; their quotient carries that drift.)
func (b *bench) replicasAgainstOne(ctx context.Context, pg *pgBench) error {
	var sides [2]side
	for k, n := range []int{1, 3} {
		put, srvs, err := b.putOnReplicas(ctx, pg, fmt.Sprintf("replicas%d", n), n)
		if err != nil {
			return err
		}
		defer stopAll(srvs)
		sides[k] = put
	}
	b.compare(ctx, sides[1], sides[0])
	return nil
}

// stepMovesAgainstOne is replicasAgainstOne for a plan's steps: each
// worker claims the one step of its own plan by name, then patches it back
// to pending (the claim's lease ends), through 3 replicas against through
// 1. Step moves of different plans are keyed writes, as PUTs are, so more
// replicas must not slow them either.
func (b *bench) stepMovesAgainstOne(ctx context.Context, pg *pgBench) error {
	var sides [2]side
	for k, n := range []int{1, 3} {
		dsn, err := pg.database(ctx, fmt.Sprintf("steps%d", n))
		if err != nil {
			return err
		}
		srvs, err := startReplicas(b.o, dsn, n)
		if err != nil {
			return err
		}
		defer stopAll(srvs)
		moves, err := b.claimAndRelease(basesOf(srvs))
		if err != nil {
			return err
		}
		moves.name = fmt.Sprintf("claim a step, then release it (PostgreSQL, %d replica%s)", n, plural(n))
		moves.proc, moves.replicas, moves.profile = srvs[0], srvs[1:], fmt.Sprintf("pg-steps%d", n)
		sides[k] = moves
	}
	b.compare(ctx, sides[1], sides[0])
	return nil
}

// claimAndRelease gives each worker a plan of one step and has it claim
// the step by name (POST …/steps/s/claim) and patch it back to pending
// (PATCH …/steps/s), in turn across rounds, worker w through
// bases[w%len(bases)]. Each request is a step move that changes the plan.
func (b *bench) claimAndRelease(bases []string) (side, error) {
	body := []byte(`{"content":"# work","steps":[{"id":"s","description":"work","owner":"planbench"}]}`)
	for w := 0; w < b.o.concurrency; w++ {
		if err := expect(b.c, "PUT", fmt.Sprintf("%s/v1/plans/steps-%d", bases[w%len(bases)], w), bytes.NewReader(body), jsonHeader, 201); err != nil {
			return side{}, err
		}
	}
	moves := make([]int, b.o.concurrency)
	return side{
		op: func(ctx context.Context, w, i int) error {
			step := fmt.Sprintf("%s/v1/plans/steps-%d/steps/s", bases[w%len(bases)], w)
			moves[w]++
			if moves[w]%2 == 1 {
				return expect(b.c, "POST", step+"/claim", strings.NewReader(fmt.Sprintf(`{"worker":"w%d"}`, w)), jsonHeader, 200)
			}
			return expect(b.c, "PATCH", step, strings.NewReader(`{"status":"pending"}`), jsonHeader, 200)
		},
	}, nil
}

// putOnReplicas starts n replicas on a fresh database called name and
// prepares the conditional PUT through them; the caller stops the
// replicas (stopAll).
func (b *bench) putOnReplicas(ctx context.Context, pg *pgBench, name string, n int) (side, []*process, error) {
	dsn, err := pg.database(ctx, name)
	if err != nil {
		return side{}, nil, err
	}
	srvs, err := startReplicas(b.o, dsn, n)
	if err != nil {
		return side{}, nil, err
	}
	put, err := b.conditionalPut(nil, basesOf(srvs), "")
	if err != nil {
		stopAll(srvs)
		return side{}, nil, err
	}
	put.name = fmt.Sprintf("PUT /v1/plans/{name} If-Match 2 KiB (PostgreSQL, %d replica%s)", n, plural(n))
	put.proc, put.replicas, put.profile = srvs[0], srvs[1:], "pg-"+name
	return put, srvs, nil
}

func stopAll(srvs []*process) {
	for _, s := range srvs {
		s.stop()
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func startReplicas(o options, dsn string, n int) ([]*process, error) {
	var srvs []*process
	for i := 0; i < n; i++ {
		s, err := startServer(o, dsn, "normal")
		if err != nil {
			stopAll(srvs)
			return nil, err
		}
		s.label = fmt.Sprintf("PostgreSQL replica %d of %d", i+1, n)
		srvs = append(srvs, s)
	}
	return srvs, nil
}

func basesOf(srvs []*process) []string {
	var out []string
	for _, s := range srvs {
		out = append(out, s.base)
	}
	return out
}

// notifyDelay writes n sessions through writer, one every 10 ms, while a
// stream on reader (another replica) waits for them, and reports how long
// each took to arrive: from the moment the write was acknowledged (its
// commit is done by then) and from the moment it was sent.
func notifyDelay(ctx context.Context, c *http.Client, reader, writer string, n int) ([]string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The stream starts at the log's head (X-Event-Seq of any read), as a
	// client that has just read the state does: from the start of the log
	// it would first replay every event of the scenarios before, whose
	// catch-up would be measured as delay.
	h, _, err := call(c, "GET", reader+"/v1/plans?limit=1", nil, nil, 200)
	if err != nil {
		return nil, err
	}
	head, err := strconv.ParseInt(h.Get("X-Event-Seq"), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("X-Event-Seq %q: %w", h.Get("X-Event-Seq"), err)
	}
	req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/v1/events?after=%d", reader, head), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	// A client of its own: the stream must not take one of the shared
	// client's connections for the whole run.
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	type arrival struct {
		id string
		at time.Time
	}
	arrivals := make(chan arrival, n)
	go func() {
		buf := make([]byte, 64<<10)
		var pending string
		for {
			k, err := resp.Body.Read(buf)
			now := time.Now()
			pending += string(buf[:k])
			for {
				i := strings.Index(pending, "\n\n")
				if i < 0 {
					break
				}
				block := pending[:i]
				pending = pending[i+2:]
				if j := strings.Index(block, `"session_id":"delay-`); j >= 0 {
					id := block[j+len(`"session_id":"`):]
					id = id[:strings.IndexByte(id, '"')]
					arrivals <- arrival{id, now}
				}
			}
			if err != nil {
				close(arrivals)
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond) // the stream is open and idle
	sent := map[string]time.Time{}
	acked := map[string]time.Time{}
	var mu sync.Mutex
	for i := 0; i < n; i++ {
		id := "delay-" + strconv.Itoa(i)
		t0 := time.Now()
		if err := expect(c, "POST", writer+"/v1/sessions", strings.NewReader(`{"id":"`+id+`"}`), jsonHeader, 201); err != nil {
			return nil, err
		}
		t1 := time.Now()
		mu.Lock()
		sent[id], acked[id] = t0, t1
		mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	var fromAck, fromSend []time.Duration
	timeout := time.After(10 * time.Second)
	for len(fromAck) < n {
		select {
		case a, ok := <-arrivals:
			if !ok {
				return nil, fmt.Errorf("stream ended after %d of %d events", len(fromAck), n)
			}
			mu.Lock()
			fromAck = append(fromAck, a.at.Sub(acked[a.id]))
			fromSend = append(fromSend, a.at.Sub(sent[a.id]))
			mu.Unlock()
		case <-timeout:
			return nil, fmt.Errorf("only %d of %d events reached the other replica's stream", len(fromAck), n)
		}
	}
	pct := func(ds []time.Duration, p float64) string {
		slices.Sort(ds)
		return fmtDur(ds[min(len(ds)-1, int(float64(len(ds))*p))])
	}
	return []string{
		fmt.Sprintf("commit on replica B to event on replica A's stream, %d writes, one every 10 ms: from B's acknowledgment p50 %s p99 %s max %s; from the request's start p50 %s p99 %s max %s",
			n, pct(fromAck, 0.5), pct(fromAck, 0.99), pct(fromAck, 1), pct(fromSend, 0.5), pct(fromSend, 0.99), pct(fromSend, 1)),
	}, nil
}

// writeShape is how isolationExperiment keeps concurrent writes correct.
type writeShape int

const (
	// advisoryLock: every write takes one global lock first and holds it
	// to its commit (planserver's choice; the baseline of the others).
	advisoryLock writeShape = iota
	// serializableRetry: SERIALIZABLE, retrying serialization failures.
	serializableRetry
	// rowLocks: the design without the global lock (issue 27, item 1): a
	// write locks only the row its precondition reads (SELECT … FOR
	// UPDATE), and appends its event last, so all writers wait only for
	// the counter row, locked from that append to the commit (and for
	// PostgreSQL's own NOTIFY lock at the commit).
	rowLocks
)

var writeShapes = [...]writeShape{advisoryLock, serializableRetry, rowLocks}

// isolationExperiment runs the shape of planserver's conditional PUT with
// raw pgx on planserver's schema, each worker on its own plan: read the
// plan's revision, update the plan, append an event (its seq from the
// counter, as planserver does), notify, commit, kept correct by shape.
// Every shape keeps seq order equal to commit order; under SERIALIZABLE
// every append conflicts on the counter row (retries are counted in the
// returned counter). No shape batches commits.
func isolationExperiment(ctx context.Context, writers int, dsn string, shape writeShape) (side, *atomic.Int64, func(), error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return side{}, nil, nil, err
	}
	cfg.MaxConns = int32(writers)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return side{}, nil, nil, err
	}
	now := db.FormatTime(time.Now())
	for w := 0; w < writers; w++ {
		if _, err := pool.Exec(ctx, `INSERT INTO plans (name, revision, created_at, updated_at, content_rev) VALUES ($1, 1, $2, $2, 1)`,
			fmt.Sprintf("iso-%d", w), now); err != nil {
			pool.Close()
			return side{}, nil, nil, err
		}
	}
	opts := pgx.TxOptions{}
	name := fmt.Sprintf("raw write txn, advisory lock, %d writers", writers)
	readRevision := `SELECT revision FROM plans WHERE name = $1`
	switch shape {
	case serializableRetry:
		opts.IsoLevel = pgx.Serializable
		name = fmt.Sprintf("raw write txn, SERIALIZABLE + retry, %d writers", writers)
	case rowLocks:
		readRevision += ` FOR UPDATE`
		name = fmt.Sprintf("raw write txn, row lock + seq last, %d writers", writers)
	}
	retries := new(atomic.Int64)
	return side{
		name:    name,
		workers: writers,
		op: func(ctx context.Context, w, i int) error {
			plan := fmt.Sprintf("iso-%d", w)
			for {
				err := pgx.BeginTxFunc(ctx, pool, opts, func(tx pgx.Tx) error {
					if shape == advisoryLock {
						if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(0x706c616e73727672)); err != nil {
							return err
						}
					}
					var rev int64
					if err := tx.QueryRow(ctx, readRevision, plan).Scan(&rev); err != nil {
						return err
					}
					if _, err := tx.Exec(ctx, `UPDATE plans SET revision = $1, updated_at = $2 WHERE name = $3`, rev+1, now, plan); err != nil {
						return err
					}
					if _, err := tx.Exec(ctx, `INSERT INTO events (type, time, actor, plan, revision, data) VALUES ('plan.updated', $1, 'bench', $2, $3, '{}')`, now, plan, rev+1); err != nil {
						return err
					}
					// Every planserver commit notifies the other replicas,
					// and PostgreSQL orders notifying commits with a lock of
					// its own, from just before the commit to its end.
					_, err := tx.Exec(ctx, `SELECT pg_notify('planbench', '')`)
					return err
				})
				var pe *pgconn.PgError
				if shape == serializableRetry && errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01") {
					retries.Add(1)
					continue
				}
				return err
			}
		},
	}, retries, pool.Close, nil
}

// lockFigures sums the write lock's counters over the replicas' /metrics
// (warm-ups included): commits, writes per commit, and the mean time a
// commit held the lock and spent in the round trip that took it.
func lockFigures(c *http.Client, bases []string, n int) string {
	var commits, writes, held, wait float64
	for _, base := range bases {
		resp, err := c.Get(base + "/metrics")
		if err != nil {
			return "write lock: " + err.Error()
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			name, value, ok := strings.Cut(line, " ")
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				continue
			}
			switch name {
			case "planserver_db_write_lock_commits_total":
				commits += v
			case "planserver_db_write_lock_writes_total":
				writes += v
			case "planserver_db_write_lock_held_seconds_total":
				held += v
			case "planserver_db_write_lock_wait_seconds_total":
				wait += v
			}
		}
	}
	if commits == 0 {
		return fmt.Sprintf("write lock, %d replica%s: no commits counted", n, plural(n))
	}
	return fmt.Sprintf("write lock, %d replica%s: %.0f commits, %.1f writes per commit, held %.2f ms per commit (%.3f ms per write), lock round trip %.2f ms per commit (wait included)",
		n, plural(n), commits, writes/commits, 1000*held/commits, 1000*held/max(1, writes), 1000*wait/commits)
}
