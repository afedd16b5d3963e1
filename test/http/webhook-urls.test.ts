/**
 * Webhook target URLs (API.md "Clients at volume": the address rules of `image_url`, no private address unless
 * FETCH_ALLOW_PRIVATE; both databases), with fast-check: loopback, unspecified, private and link-local addresses in
 * every notation the WHATWG URL parser reads (one to four parts in decimal, hex or octal, trailing dot, full-width
 * or percent-encoded characters, IPv6 compressed or not, IPv4-mapped), with userinfo, other schemes, ports, paths,
 * fragments, over-long. POST and PATCH /api/webhooks refuse each such address literal, each scheme but http(s), each
 * userinfo and each URL over 2 048 characters with 400 naming `url`, and take public literals; a host name (one that
 * resolves to loopback included) may be taken, but no delivery ever opens a connection to a forbidden address: a
 * raw TCP listener on `::` counts none while deliveries to every form, written into the endpoint as if registered
 * while FETCH_ALLOW_PRIVATE was on, are attempted and fail. The control: with the rule lifted, the same forms do
 * reach the listener (postWebhook), so they are not noise.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import fc from 'fast-check';
import { startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { uploadLink } from '../support/uploads.ts';
import { eventually } from '../support/webhook-receiver.ts';
import { postWebhook } from '../../src/net/webhook-post.ts';
import { isForbiddenAddress } from '../../src/net/address-policy.ts';
import { disguised, ip4, v4Written } from '../support/address-forms.ts';

/** A raw TCP listener on every address of this machine that counts connections and answers 204. */
async function trap() {
  const state = { port: 0, connections: 0, close: async () => {} };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    state.connections++;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('data', () => socket.end('HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n'));
  });
  await new Promise<void>((resolve) => server.listen({ port: 0, host: '::', ipv6Only: false }, resolve));
  state.port = (server.address() as net.AddressInfo).port;
  state.close = () => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return state;
}

let app: TestApp;
let listener: Awaited<ReturnType<typeof trap>>;
/** Host names that resolve here to an address outside the public internet (this machine's own name, usually). */
const localNames = ['localhost', 'LOCALHOST.', 'ip6-localhost'];

before(async () => {
  listener = await trap();
  app = await startApp({
    WEBHOOK_INTERVAL_MS: '50',
    WEBHOOK_TIMEOUT_MS: '2000',
    WEBHOOK_RETRY_SCHEDULE: '200ms,200ms',
  });
  const own = await lookup(hostname(), { all: true }).catch(() => []);
  if (own.length && own.every((a) => isForbiddenAddress(a.address) !== null)) localNames.push(hostname());
});
after(async () => {
  await app?.close();
  await listener?.close();
});

/** Addresses outside the public internet (RFC 6890): loopback, unspecified, private, link-local, CGNAT. */
const forbiddenV4 = fc.oneof(
  fc.integer({ min: ip4('127.0.0.1'), max: ip4('127.255.255.254') }),
  fc.constantFrom(ip4('127.0.0.1'), 0, ip4('10.0.0.1'), ip4('192.168.1.1'), ip4('172.16.5.4')),
  fc.constantFrom(ip4('169.254.169.254'), ip4('100.64.0.1')),
);
const forbiddenV6 = fc.oneof(
  fc.constantFrom('::1', '0:0:0:0:0:0:0:1', '0000::0001', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1'),
  fc.tuple(fc.integer({ min: 1, max: 0xfffffe }), fc.boolean(), fc.boolean()).map(([low, dotted, upper]) => {
    const text = dotted
      ? `::ffff:127.${low >>> 16}.${(low >>> 8) & 255}.${low & 255}`
      : `::ffff:${(0x7f00 | (low >>> 16)).toString(16)}:${(low & 0xffff).toString(16)}`;
    return upper ? text.toUpperCase() : text;
  }),
);
/** A forbidden address literal, as written in a URL. */
const forbiddenHost = fc.oneof(
  forbiddenV4.chain(v4Written).chain(disguised),
  forbiddenV6.map((h) => `[${h}]`),
);
/** Public addresses: registration takes them in any notation (nothing here ever delivers to them). */
const publicHost = fc.oneof(
  fc.constantFrom(ip4('8.8.8.8'), ip4('93.184.216.34'), ip4('1.1.1.1')).chain(v4Written).chain(disguised),
  fc.constantFrom('[2001:4860:4860::8888]', '[2606:4700:4700::1111]'),
);

const scheme = fc.constantFrom('http://', 'https://', 'HTTP://', 'Https://');
const badScheme = fc.constantFrom('ftp://', 'file://', 'ws://', 'gopher://', 'javascript://', 'data://');
const userinfo = fc.constantFrom('u@', 'u:p@', ':p@', 'a%40b:c@', 'hooks.example.com@');
const tail = fc.constantFrom('/', '/hook', '/hook?x=1', '/hook#frag', '#f', '', '/a/../b', '?q');

interface Form {
  url: string;
  /** What the contract makes of it at registration: 'refused', 'taken', or 'either' for a host name. */
  expect: 'refused' | 'taken' | 'either';
}

const port = () => fc.constantFrom(`:${listener.port}`, `:000${listener.port}`);
const forbiddenForm: fc.Arbitrary<Form> = fc.oneof(
  fc.tuple(scheme, forbiddenHost, fc.constant(0).chain(port), tail).map((p) => ({
    url: p.join(''),
    expect: 'refused' as const,
  })),
  fc
    .tuple(
      scheme,
      fc.constant(null).chain(() => fc.constantFrom(...localNames)),
      fc.constant(0).chain(port),
      tail,
    )
    .map((p) => ({
      url: p.join(''),
      expect: 'either' as const,
    })),
);
const otherForm: fc.Arbitrary<Form> = fc.oneof(
  fc.tuple(scheme, publicHost, tail).map((p) => ({ url: p.join(''), expect: 'taken' as const })),
  fc
    .tuple(badScheme, fc.oneof(publicHost, forbiddenHost), tail)
    .map((p) => ({ url: p.join(''), expect: 'refused' as const })),
  fc.tuple(scheme, userinfo, fc.oneof(publicHost, forbiddenHost), tail).map((p) => ({
    url: p.join(''),
    expect: 'refused' as const,
  })),
  fc.tuple(scheme, publicHost, fc.integer({ min: 2049, max: 2100 })).map(([s, h, n]) => {
    const head = `${s}${h}/`;
    return { url: head + 'a'.repeat(n - head.length), expect: 'refused' as const };
  }),
);

/** The URL parser's reading of `url`, when it is an http(s) URL without userinfo whose host is the listener's. */
function onListener(url: string): boolean {
  try {
    const u = new URL(url);
    return (
      /^https?:$/.test(u.protocol) &&
      !u.username &&
      !u.password &&
      Number(u.port) === listener.port &&
      /^(127\.\d+\.\d+\.\d+|0\.0\.0\.0|\[::1\]|\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]|localhost)$/.test(u.hostname)
    );
  } catch {
    return false;
  }
}

describe('webhook target URLs', () => {
  let user: TestUser;
  let spare: string;
  before(async () => {
    user = await registerUser(app.api);
    const r = await app.api.post(
      '/api/webhooks',
      { url: 'https://hooks.example.com/spare', events: ['upload.held'] },
      { token: user.token },
    );
    assert.equal(r.status, 201, r.text);
    spare = r.body.id;
  });

  test('POST and PATCH refuse forbidden literals, other schemes, userinfo and overlong URLs, naming url', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(forbiddenForm, otherForm), fc.boolean(), async ({ url, expect }, patch) => {
        const res = patch
          ? await app.api.patch(`/api/webhooks/${spare}`, { url }, { token: user.token })
          : await app.api.post('/api/webhooks', { url, events: ['upload.held'] }, { token: user.token });
        assert.notEqual(res.status, 500, res.text);
        if (expect === 'refused' || (expect === 'either' && res.status === 400)) {
          assert.equal(res.status, 400, `${url}: ${res.text}`);
          assert.equal(res.body.error, 'invalid_request');
          assert.match(res.body.message, /^url /, url);
          // A sentence (API.md: "a human sentence"): "an IPv4-mapped loopback address", not "a IPv4-mapped".
          assert.doesNotMatch(res.body.message, /points to a (?!uni)[aeiou]/i, url);
        } else assert.equal(res.status, patch ? 200 : 201, `${url}: ${res.text}`);
        if (res.status === 201) await app.api.del(`/api/webhooks/${res.body.id}`, { token: user.token });
      }),
      { numRuns: 150 },
    );
    assert.equal(listener.connections, 0);
  });

  test('delivery to any forbidden form is attempted and fails without a connection', async () => {
    await fc.assert(
      fc.asyncProperty(forbiddenForm, async ({ url }) => {
        const owner = await registerUser(app.api);
        const created = await app.api.post(
          '/api/webhooks',
          { url: 'https://hooks.example.com/x', events: ['upload.processed'] },
          { token: owner.token },
        );
        assert.equal(created.status, 201, created.text);
        const id = created.body.id as string;
        // As if registered while FETCH_ALLOW_PRIVATE was on: the rule still holds when it is sent.
        await app.composed.db.db().updateTable('webhook_endpoints').set({ url }).where('id', '=', id).execute();
        await uploadLink(app.api, owner);
        let seen: { attempts: number; last_error: string | null } | undefined;
        await eventually(
          async () => {
            const log = await app.api.get(`/api/webhooks/${id}/deliveries`, { token: owner.token });
            seen = log.body.deliveries?.[0];
            return (seen?.attempts ?? 0) >= 1;
          },
          10_000,
          `a delivery attempt to ${url}`,
        );
        assert.ok(seen?.last_error, `${url}: the attempt failed (${JSON.stringify(seen)})`);
        assert.equal(listener.connections, 0, `${url} reached the listener`);
      }),
      { numRuns: 20 },
    );
  });

  test('the control: with the rule lifted, the forms the URL parser puts on the listener reach it', async () => {
    let reached = 0;
    await fc.assert(
      fc.asyncProperty(forbiddenForm, async ({ url }) => {
        if (!onListener(url)) return;
        const before = listener.connections;
        const r = await postWebhook(url.replace(/^https/i, 'http'), {}, '{}', { timeoutMs: 2000, allowPrivate: true });
        assert.equal(r.status, 204, url);
        assert.equal(listener.connections, before + 1, url);
        reached++;
      }),
      { numRuns: 150 },
    );
    // About a third of the forms land on the listener (the rest: names, other hosts, what the parser refuses); the
    // bar is far under that, so a seed never fails it by chance (20 of 60 once did), and still fails a generator
    // whose forms stop meaning the listener.
    assert.ok(reached >= 20, `${reached} of 150 forms reached the listener`);
  });
});
