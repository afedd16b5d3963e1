/**
 * compose.yaml: the service built from the Dockerfile, PostgreSQL 16 and Redis 7, the service started only once
 * both pass their health checks, its environment pointing at them, JWT_SECRET required from the environment,
 * NODE_ENV=production and its data on a named volume. Read with the `yaml` library; also through
 * `docker compose config` when that is installed (it needs no engine).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config.ts';
import { dockerfile, envOf, ROOT } from '../support/start-command.ts';

interface Service {
  build?: string | { context: string };
  image?: string;
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  stop_grace_period?: string;
}
const compose = parse(readFileSync(`${ROOT}/compose.yaml`, 'utf8')) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
const app = compose.services.pixvote!;
const postgres = compose.services.postgres!;
const redis = compose.services.redis!;

test('three services: pixvote built from the Dockerfile here, PostgreSQL 16, Redis 7 (+ an optional store)', () => {
  assert.deepEqual(Object.keys(compose.services).sort(), ['objectstore', 'pixvote', 'postgres', 'redis']);
  // The object store starts only with its profile (docker compose --profile s3 up).
  assert.deepEqual((compose.services.objectstore as { profiles?: string[] }).profiles, ['s3']);
  assert.equal(typeof app.build === 'string' ? app.build : app.build?.context, '.');
  assert.match(postgres.image ?? '', /^postgres:16(\b|-)/);
  assert.match(redis.image ?? '', /^redis:7(\b|-)/);
});

test('pixvote starts only once PostgreSQL and Redis pass their health checks', () => {
  assert.deepEqual(app.depends_on, {
    postgres: { condition: 'service_healthy' },
    redis: { condition: 'service_healthy' },
  });
  assert.deepEqual(postgres.healthcheck?.test.slice(0, 2), ['CMD', 'pg_isready']);
  assert.deepEqual(redis.healthcheck?.test, ['CMD', 'redis-cli', 'ping']);
});

test("pixvote's environment: both services, NODE_ENV=production, JWT_SECRET required, data on a named volume", () => {
  const env = app.environment!;
  assert.equal(env.NODE_ENV, 'production');
  assert.match(env.JWT_SECRET!, /^\$\{JWT_SECRET:\?[^}]+\}$/, 'compose refuses to start without JWT_SECRET');
  const db = new URL(env.DATABASE_URL!.replace(/\$\{POSTGRES_PASSWORD:-(\w+)\}/, '$1'));
  assert.equal(db.protocol, 'postgres:');
  assert.equal(db.hostname, 'postgres');
  assert.equal(db.username, postgres.environment!.POSTGRES_USER);
  assert.equal(db.pathname, `/${postgres.environment!.POSTGRES_DB}`);
  assert.equal(postgres.environment!.POSTGRES_PASSWORD, '${POSTGRES_PASSWORD:-pixvote}');
  assert.equal(new URL(env.REDIS_URL!).hostname, 'redis');
  // The environment the server gets is one it accepts.
  const config = loadConfig({ ...defaultsOf(env), JWT_SECRET: 'z'.repeat(40), DATABASE_URL: db.toString() });
  assert.equal(config.nodeEnv, 'production');

  const dataDir = env.DATA_DIR ?? envOf(dockerfile(), 1).DATA_DIR;
  const mount = app.volumes?.find((v) => v.endsWith(`:${dataDir}`));
  assert.ok(mount, `a volume is mounted at DATA_DIR (${dataDir})`);
  assert.ok(mount.split(':')[0]! in compose.volumes, 'a named volume, declared at the top level');
  // Compose's stop waits longer than the server's own drain (SHUTDOWN_GRACE_MS) before it kills.
  const grace = Number(/^(\d+)s$/.exec(app.stop_grace_period ?? '10s')![1]) * 1000;
  assert.ok(
    grace > loadConfig({ ...defaultsOf(env), JWT_SECRET: 'z'.repeat(40), DATABASE_URL: db.toString() }).shutdownGraceMs,
  );
});

/** The environment as compose fills it in with nothing set: `${VAR:-default}` → default. */
function defaultsOf(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v.replace(/^\$\{\w+:-([^}]*)\}$/, '$1')]));
}

const dockerCompose = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' });
const noCompose =
  dockerCompose.status !== 0 &&
  `\`docker compose\` is not installed here (${
    (dockerCompose.error?.message ?? dockerCompose.stderr).trim().split('\n')[0]
  })`;

test('`docker compose config` accepts the file, and refuses it without JWT_SECRET', { skip: noCompose }, () => {
  const run = (env: Record<string, string>) =>
    spawnSync('docker', ['compose', '-f', `${ROOT}/compose.yaml`, 'config', '--format', 'json'], {
      encoding: 'utf8',
      cwd: ROOT,
      env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', ...env },
    });
  const ok = run({ JWT_SECRET: 'z'.repeat(40) });
  assert.equal(ok.status, 0, ok.stderr);
  const resolved = JSON.parse(ok.stdout) as { services: Record<string, Service> };
  assert.equal(resolved.services.pixvote!.environment!.JWT_SECRET, 'z'.repeat(40));
  const missing = run({});
  assert.notEqual(missing.status, 0);
  assert.match(missing.stderr, /JWT_SECRET/);
});
