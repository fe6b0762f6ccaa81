'use strict';
// node-postgres (pg, pg-cursor, pg-copy-streams) against fvsql or a real
// PostgreSQL holding tests/clients/fixture. The program contract: one line
// per check on stdout, "ok <name>" or "FAIL <name>: <reason>", exit 0 iff
// all passed. Connection from PGHOST, PGPORT, PGUSER, PGPASSWORD,
// PGDATABASE (pg reads them itself); TLS is forced with a self-signed
// certificate accepted (fvsql's --tls-self-signed), SCRAM by the server.
//
// Run: NODE_PATH=<dir>/node_modules node tests/clients/node/suite.js
// (the modules of package.json, installed outside the repo).

const assert = require('assert/strict');
const tls = require('tls');
const { pipeline } = require('stream/promises');
const { Readable } = require('stream');
const pg = require('pg');
const Cursor = require('pg-cursor');
const copy = require('pg-copy-streams');

const target = process.env.FVSQL_CLIENT_TARGET || 'fvsql';

// Every connection: TLS without verification, bounded connect and query
// times (query_timeout is the client's own; the server's statement_timeout
// is sent as a startup parameter only by the check that tests it).
function config(extra) {
  return Object.assign({
    ssl: { rejectUnauthorized: false },
    connectionTimeoutMillis: 10000,
    query_timeout: 20000,
    application_name: 'fvsql-node-suite',
  }, extra || {});
}

let failed = 0;
async function check(name, fn) {
  const start = Date.now();
  try {
    await fn();
    process.stderr.write(`${name}: ${Date.now() - start} ms\n`);
    process.stdout.write(`ok ${name}\n`);
  } catch (e) {
    failed++;
    const reason = (e && (e.code ? `[${e.code}] ` : '') + (e.message || String(e))) || String(e);
    process.stdout.write(`FAIL ${name}: ${reason.replace(/\s+/g, ' ').slice(0, 400)}\n`);
    process.stderr.write(`${name}: ${e && e.stack ? e.stack : e}\n`);
  }
}

// expectError runs fn and returns the error it must throw.
async function expectError(fn) {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected an error, the statement succeeded');
}

async function withClient(fn, extra) {
  const client = new pg.Client(config(extra));
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

// The Date pg makes of a timestamp (without time zone) is local time: its
// local fields are the stored ones, whatever TZ this process has.
function localFields(d) {
  assert.ok(d instanceof Date, `expected a Date, got ${typeof d} ${d}`);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

const OID = { bool: 16, int8: 20, int4: 23, text: 25, numeric: 1700, timestamp: 1114 };

async function main() {
  const client = new pg.Client(config());
  let connected = false;

  await check('connect-scram-tls', async () => {
    await client.connect();
    connected = true;
    assert.ok(client.connection.stream instanceof tls.TLSSocket, 'the connection is not TLS');
    assert.ok(client.connection.stream.encrypted, 'the socket is not encrypted');
    const r = await client.query('SELECT current_user AS u, current_database() AS d');
    assert.deepEqual(r.rows, [{ u: process.env.PGUSER, d: process.env.PGDATABASE }]);
  });
  if (!connected) {
    process.exit(1);
  }

  await check('simple-query', async () => {
    // No values: pg sends a simple Query message.
    const r = await client.query('SELECT id, name, qty FROM items ORDER BY id');
    assert.equal(r.command, 'SELECT');
    assert.equal(r.rowCount, 3);
    assert.deepEqual(r.fields.map((f) => f.name), ['id', 'name', 'qty']);
    assert.deepEqual(r.fields.map((f) => f.dataTypeID), [OID.int8, OID.text, OID.int4]);
    assert.deepEqual(r.rows, [
      { id: '1', name: 'apple', qty: 10 },
      { id: '2', name: 'pear', qty: 5 },
      { id: '3', name: 'plum', qty: 20 },
    ]);
  });

  await check('simple-query-multi-statement', async () => {
    const rs = await client.query("SELECT 1 AS a; SELECT 'x' AS b, name FROM items WHERE id = 3");
    assert.ok(Array.isArray(rs), 'two statements give an array of results');
    assert.equal(rs.length, 2);
    assert.deepEqual(rs[0].rows, [{ a: 1 }]);
    assert.deepEqual(rs[1].rows, [{ b: 'x', name: 'plum' }]);
  });

  await check('params-column-types', async () => {
    const r = await client.query('SELECT id, name, price, qty, added FROM items WHERE id = $1', [2]);
    assert.deepEqual(r.fields.map((f) => f.dataTypeID), [OID.int8, OID.text, OID.numeric, OID.int4, OID.timestamp]);
    assert.equal(r.rows.length, 1);
    const row = r.rows[0];
    assert.equal(row.id, '2', 'int8 is parsed to a string');
    assert.equal(row.name, 'pear');
    assert.equal(row.price, '2.50', 'numeric is a string with its scale');
    assert.equal(row.qty, 5);
    assert.equal(localFields(row.added), '2026-01-01 11:00:00');
  });

  await check('params-bool-null-int', async () => {
    const r = await client.query('SELECT $1::boolean AS b, $2::text AS n, $3::integer AS i, $4::bigint AS big, $5::text AS s',
      [true, null, 7, '9007199254740993', 'héllo']);
    assert.deepEqual(r.fields.map((f) => f.dataTypeID), [OID.bool, OID.text, OID.int4, OID.int8, OID.text]);
    assert.deepEqual(r.rows, [{ b: true, n: null, i: 7, big: '9007199254740993', s: 'héllo' }]);
    const f = await client.query('SELECT $1::boolean AS b', [false]);
    assert.strictEqual(f.rows[0].b, false);
  });

  await check('params-numeric-timestamp-filter', async () => {
    const r = await client.query('SELECT name, price FROM items WHERE price > $1 ORDER BY price', ['1.00']);
    assert.deepEqual(r.rows, [{ name: 'apple', price: '1.25' }, { name: 'pear', price: '2.50' }]);
    const t = await client.query('SELECT id FROM items WHERE added >= $1::timestamp ORDER BY id', ['2026-01-01 10:30:00']);
    assert.deepEqual(t.rows.map((x) => x.id), ['2', '3']);
    const s = await client.query('SELECT sum(qty) AS total, sum(price) AS value, count(*) AS n FROM items WHERE id <= $1', [3]);
    assert.deepEqual(s.rows, [{ total: '35', value: '4.50', n: '3' }]);
  });

  await check('prepared-named-reused', async () => {
    const q = (id) => ({ name: 'q1', text: 'SELECT name, qty FROM items WHERE id = $1', values: [id] });
    const a = await client.query(q(1));
    const b = await client.query(q(3));
    const c = await client.query(q(42));
    assert.deepEqual(a.rows, [{ name: 'apple', qty: 10 }]);
    assert.deepEqual(b.rows, [{ name: 'plum', qty: 20 }]);
    assert.deepEqual(c.rows, []);
    // pg parses q1 once per connection and binds it again afterwards.
    assert.ok(client.connection.parsedStatements.q1, 'q1 is not remembered as parsed');
  });

  await check('rowmode-array', async () => {
    const r = await client.query({ text: 'SELECT id, name, price FROM items WHERE id >= $1 ORDER BY id', values: [2], rowMode: 'array' });
    assert.deepEqual(r.rows, [['2', 'pear', '2.50'], ['3', 'plum', '0.75']]);
    assert.deepEqual(r.fields.map((f) => f.name), ['id', 'name', 'price']);
  });

  await check('cursor-items-batches', async () => {
    const cursor = client.query(new Cursor('SELECT id, name FROM items WHERE qty > $1 ORDER BY id', [0]));
    try {
      const a = await cursor.read(2);
      const b = await cursor.read(2);
      const c = await cursor.read(2);
      assert.deepEqual(a, [{ id: '1', name: 'apple' }, { id: '2', name: 'pear' }]);
      assert.deepEqual(b, [{ id: '3', name: 'plum' }]);
      assert.deepEqual(c, []);
    } finally {
      await cursor.close();
    }
  });

  await check('cursor-generate-series', async () => {
    const cursor = client.query(new Cursor('SELECT g AS n FROM generate_series(1, 1000) AS g'));
    let count = 0, sum = 0, reads = 0, last = 0;
    try {
      for (;;) {
        const rows = await cursor.read(2);
        reads++;
        if (rows.length === 0) break;
        assert.ok(rows.length <= 2, `a read of 2 returned ${rows.length} rows`);
        for (const row of rows) {
          assert.equal(row.n, last + 1, 'rows in order');
          last = row.n;
          count++;
          sum += row.n;
        }
      }
    } finally {
      await cursor.close();
    }
    assert.equal(count, 1000);
    assert.equal(sum, 500500);
    assert.equal(reads, 501);
    // The connection is usable after the cursor.
    const r = await client.query('SELECT count(*) AS n FROM items');
    assert.equal(r.rows[0].n, '3');
  });

  await check('cursor-closed-early', async () => {
    const cursor = client.query(new Cursor('SELECT g AS n FROM generate_series(1, 1000) AS g'));
    const rows = await cursor.read(2);
    await cursor.close();
    assert.deepEqual(rows, [{ n: 1 }, { n: 2 }]);
    const r = await client.query('SELECT name FROM items WHERE id = $1', [2]);
    assert.deepEqual(r.rows, [{ name: 'pear' }]);
  });

  await check('pool-acquire-release', async () => {
    const pool = new pg.Pool(config({ max: 2, idleTimeoutMillis: 5000 }));
    try {
      for (let i = 0; i < 6; i++) {
        const c = await pool.connect();
        try {
          const r = await c.query('SELECT name FROM items WHERE id = $1', [(i % 3) + 1]);
          assert.deepEqual(r.rows, [{ name: ['apple', 'pear', 'plum'][i % 3] }]);
        } finally {
          c.release();
        }
      }
      assert.ok(pool.totalCount >= 1 && pool.totalCount <= 2, `pool holds ${pool.totalCount} clients`);
      assert.equal(pool.idleCount, pool.totalCount);
    } finally {
      await pool.end();
    }
  });

  await check('pool-concurrent-queries', async () => {
    const pool = new pg.Pool(config({ max: 4 }));
    try {
      const jobs = [];
      for (let i = 0; i < 12; i++) {
        jobs.push(pool.query('SELECT $1::integer * 2 AS n, count(*) AS c FROM items', [i]));
      }
      const rs = await Promise.all(jobs);
      rs.forEach((r, i) => assert.deepEqual(r.rows, [{ n: i * 2, c: '3' }]));
      assert.equal(pool.totalCount, 4, 'twelve queries at once open all four connections');
      const held = await Promise.all([pool.connect(), pool.connect()]);
      const [a, b] = await Promise.all(held.map((c, i) => c.query('SELECT $1::text AS who', [`c${i}`])));
      held.forEach((c) => c.release());
      assert.deepEqual([a.rows, b.rows], [[{ who: 'c0' }], [{ who: 'c1' }]]);
    } finally {
      await pool.end();
    }
  });

  await check('transaction-commit', async () => {
    await client.query('BEGIN');
    const ins = await client.query('INSERT INTO writes_node (id, note) VALUES ($1, $2), ($3, $4)', [101, 'tx one', 102, 'tx two']);
    assert.equal(ins.command, 'INSERT');
    assert.equal(ins.rowCount, 2);
    const c = await client.query('COMMIT');
    assert.equal(c.command, 'COMMIT');
    const r = await client.query('SELECT id, note FROM writes_node WHERE id IN (101, 102) ORDER BY id');
    assert.deepEqual(r.rows, [{ id: '101', note: 'tx one' }, { id: '102', note: 'tx two' }]);
  });

  await check('transaction-error-rollback', async () => {
    await client.query('BEGIN');
    const e = await expectError(() => client.query('SELECT * FROM no_such_relation_node'));
    assert.equal(e.code, '42P01');
    const aborted = await expectError(() => client.query('SELECT 1'));
    assert.equal(aborted.code, '25P02', 'statements in a failed transaction are refused');
    const rb = await client.query('ROLLBACK');
    assert.equal(rb.command, 'ROLLBACK');
    const r = await client.query('SELECT name FROM items WHERE id = $1', [1]);
    assert.deepEqual(r.rows, [{ name: 'apple' }]);
  });

  await check('transaction-rollback-discards-insert', async () => {
    await client.query('BEGIN');
    await client.query('INSERT INTO writes_node (id, note) VALUES ($1, $2)', [103, 'rolled back']);
    await client.query('ROLLBACK');
    const r = await client.query('SELECT count(*) AS n FROM writes_node WHERE id = 103');
    assert.equal(r.rows[0].n, '0', 'a rolled back INSERT left its row');
  });

  await check('error-undefined-table', async () => {
    const e = await expectError(() => client.query('SELECT * FROM no_such_relation_node'));
    assert.ok(e instanceof pg.DatabaseError, `not a DatabaseError: ${e}`);
    assert.equal(e.code, '42P01');
    assert.equal(e.severity, 'ERROR');
    assert.equal(e.position, '15');
    assert.match(e.message, /no_such_relation_node/);
  });

  await check('error-syntax', async () => {
    const e = await expectError(() => client.query('SELEC name FROM items'));
    assert.equal(e.code, '42601');
    assert.equal(e.position, '1');
    const e2 = await expectError(() => client.query('SELECT name FROM items WHERE'));
    assert.equal(e2.code, '42601');
    assert.equal(e2.position, '29', 'a syntax error at the end of input points one past its last character');
  });

  await check('error-division-by-zero', async () => {
    const e = await expectError(() => client.query('SELECT 1 / 0 AS x'));
    assert.equal(e.code, '22012');
    const p = await expectError(() => client.query('SELECT qty / $1::integer AS x FROM items', [0]));
    assert.equal(p.code, '22012');
    assert.match(p.message, /division by zero/);
  });

  await check('error-undefined-column-position', async () => {
    const e = await expectError(() => client.query('SELECT id, nope FROM items'));
    assert.equal(e.code, '42703');
    assert.equal(e.position, '12');
  });

  await check('connection-usable-after-errors', async () => {
    const r = await client.query({ name: 'q1', text: 'SELECT name, qty FROM items WHERE id = $1', values: [2] });
    assert.deepEqual(r.rows, [{ name: 'pear', qty: 5 }]);
    const s = await client.query('SELECT 40 + 2 AS n');
    assert.deepEqual(s.rows, [{ n: 42 }]);
  });

  await check('startup-statement-timeout', async () => {
    // pg sends statement_timeout as a startup parameter.
    await withClient(async (c) => {
      const r = await c.query('SHOW statement_timeout');
      assert.equal(r.rows[0].statement_timeout, '5s');
    }, { statement_timeout: 5000 });
  });

  await check('copy-from-stdin', async () => {
    const sink = client.query(copy.from('COPY writes_node (id, note) FROM STDIN'));
    await pipeline(Readable.from(['201\tcopy one\n', '202\tcopy\\ttab\n', '203\t\\N\n']), sink);
    assert.equal(sink.rowCount, 3);
    const r = await client.query('SELECT id, note FROM writes_node WHERE id BETWEEN 201 AND 203 ORDER BY id');
    assert.deepEqual(r.rows, [{ id: '201', note: 'copy one' }, { id: '202', note: 'copy\ttab' }, { id: '203', note: null }]);
  });

  await check('copy-from-stdin-csv', async () => {
    const sink = client.query(copy.from('COPY writes_node (id, note) FROM STDIN WITH (FORMAT csv, HEADER true)'));
    await pipeline(Readable.from(['id,note\n', '211,"csv, quoted"\n', '212,plain\n']), sink);
    assert.equal(sink.rowCount, 2);
    const r = await client.query('SELECT note FROM writes_node WHERE id IN (211, 212) ORDER BY id');
    assert.deepEqual(r.rows.map((x) => x.note), ['csv, quoted', 'plain']);
  });

  await check('copy-to-stdout', async () => {
    const source = client.query(copy.to('COPY (SELECT id, name, price FROM items ORDER BY id) TO STDOUT'));
    const chunks = [];
    for await (const chunk of source) chunks.push(chunk);
    assert.equal(Buffer.concat(chunks).toString('utf8'), '1\tapple\t1.25\n2\tpear\t2.50\n3\tplum\t0.75\n');
    assert.equal(source.rowCount, 3);
  });

  await check('copy-to-stdout-csv', async () => {
    const source = client.query(copy.to("COPY (SELECT id, name, added FROM items WHERE id < 3 ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)"));
    const chunks = [];
    for await (const chunk of source) chunks.push(chunk);
    assert.equal(Buffer.concat(chunks).toString('utf8'),
      'id,name,added\n1,apple,2026-01-01 10:00:00\n2,pear,2026-01-01 11:00:00\n');
  });

  await check('inserts-read-back', async () => {
    for (let i = 0; i < 5; i++) {
      const r = await client.query('INSERT INTO writes_node (id, note) VALUES ($1, $2)', [301 + i, `row ${i}`]);
      assert.equal(r.rowCount, 1);
    }
    const named = { name: 'ins_node', text: 'INSERT INTO writes_node (id, note) VALUES ($1, $2)' };
    await client.query(Object.assign({ values: [306, 'named one'] }, named));
    await client.query(Object.assign({ values: [307, null] }, named));
    const r = await client.query('SELECT id, note FROM writes_node WHERE id BETWEEN 301 AND 307 ORDER BY id');
    assert.deepEqual(r.rows.map((x) => [x.id, x.note]), [
      ['301', 'row 0'], ['302', 'row 1'], ['303', 'row 2'], ['304', 'row 3'], ['305', 'row 4'],
      ['306', 'named one'], ['307', null],
    ]);
    const n = await client.query('SELECT count(*) AS n FROM writes_node WHERE id BETWEEN 101 AND 399');
    // 2 committed in transaction-commit, 3 + 2 copied, 7 inserted here (if those checks passed).
    assert.ok(Number(n.rows[0].n) >= 7, `writes_node holds ${n.rows[0].n} of this run's rows`);
  });

  await client.end().catch(() => {});
  // Exit now: pg leaves query_timeout timers of cursor and COPY queries
  // armed, which would hold the process for their 20 s (stdout is a pipe,
  // written synchronously on Linux, so nothing is lost).
  process.exit(failed === 0 ? 0 : 1);
}

// Bound the whole program: a hung server must not hang the harness.
setTimeout(() => {
  process.stdout.write('FAIL suite-timeout: the program did not finish in 60s\n');
  process.exit(1);
}, 60000).unref();

main().catch((e) => {
  process.stderr.write(`suite: ${e && e.stack ? e.stack : e}\n`);
  process.stdout.write(`FAIL suite: ${String(e && e.message ? e.message : e).replace(/\s+/g, ' ')}\n`);
  process.exit(1);
});
