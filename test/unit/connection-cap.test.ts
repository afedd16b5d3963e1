import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Server } from 'node:http';
import { capConnectionsPerAddress, isRefusedConnection } from '../../src/gateway/connection-cap.ts';

class FakeSocket extends EventEmitter {
  written = '';
  destroyed = false;
  readonly remoteAddress: string;
  constructor(remoteAddress: string) {
    super();
    this.remoteAddress = remoteAddress;
  }
  end(data: string) {
    this.written += data;
    this.emit('finish');
  }
  destroy() {
    if (!this.destroyed) {
      this.destroyed = true;
      this.emit('close');
    }
  }
}

test('the cap counts an IPv6 client by its /64, an IPv4-mapped address as its IPv4; refusals logged once', () => {
  const server = new EventEmitter();
  const lines: unknown[] = [];
  let refused = 0;
  let now = 0;
  const log = { warn: (obj: unknown) => void lines.push(obj) };
  capConnectionsPerAddress(server as unknown as Server, {
    max: 2,
    log: log as never,
    onRefused: () => refused++,
    logIntervalMs: 60_000,
    now: () => now,
  });
  const connect = (address: string) => {
    const s = new FakeSocket(address);
    server.emit('connection', s);
    return s;
  };
  const a = connect('2001:db8:1:2::1');
  connect('2001:db8:1:2:ffff::9');
  const third = connect('2001:db8:1:2:abcd::3');
  assert.ok(isRefusedConnection(third as never), 'a third address of the same /64 is the same client');
  assert.match(third.written, /^HTTP\/1\.1 503 /);
  assert.ok(third.destroyed);
  assert.ok(!isRefusedConnection(connect('2001:db8:1:3::1') as never), 'the next /64 is another client');
  connect('203.0.113.7');
  connect('::ffff:203.0.113.7');
  assert.ok(isRefusedConnection(connect('203.0.113.7') as never));
  assert.equal(refused, 2);
  assert.equal(lines.length, 2, 'one line per address');
  now += 1000;
  connect('2001:db8:1:2::5');
  assert.equal(lines.length, 2, 'within the interval: no new line');
  now += 60_000;
  connect('2001:db8:1:2::5');
  assert.equal(lines.length, 3, 'the next interval: one line, counting those it stands for');
  assert.equal((lines[2] as { refusedSinceLastLine: number }).refusedSinceLastLine, 2);
  a.destroy();
  assert.ok(!isRefusedConnection(connect('2001:db8:1:2::5') as never), 'a closed connection makes room');
});

test('max 0: no cap', () => {
  const server = new EventEmitter();
  capConnectionsPerAddress(server as unknown as Server, { max: 0 });
  assert.equal(server.listenerCount('connection'), 0);
});
