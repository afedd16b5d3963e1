/**
 * The multipart middleware on a real HTTP server when the connection closes before the body is read: the
 * case that used to hang forever (formidable waiting for an 'end' that cannot come) and leave the temp
 * directory behind. Made certain here by holding the request until Node has destroyed its connection.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Koa from 'koa';
import { multipartUpload } from '../../src/gateway/middleware/multipart.ts';
import type { AppState } from '../../src/gateway/context.ts';
import { createHttpServer } from '../../src/server.ts';
import { encodeForm, openRaw } from '../support/raw-http.ts';
import { until } from '../support/budget.ts';

test(
  'a body longer than its Content-Length, its connection gone before the body is read: 400 at once, ' +
    'temp directory removed',
  async () => {
    const root = await mkdtemp(join(tmpdir(), 'pixvote-multipart-'));
    const app = new Koa<AppState>();
    app.silent = true;
    const settled: Array<{ status: number; error?: string }> = [];
    app.use(async (ctx, next) => {
      // Like a slow authentication: the request waits while Node refuses the bytes after its body and closes
      // the connection.
      if (!ctx.req.socket.destroyed) await once(ctx.req.socket, 'close');
      try {
        await next();
        settled.push({ status: 200 });
      } catch (e) {
        settled.push({ status: (e as { status: number }).status, error: (e as Error).message });
      }
    });
    const media = {
      tempDir: async (name: string) => await mkdtemp(join(root, `${name}-`)),
      stat: async () => null,
      read: async () => null,
    };
    app.use(multipartUpload({ media }));
    app.use((ctx) => void (ctx.body = 'parsed'));
    const server = createHttpServer(app.callback());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const form = new FormData();
      form.append('upload_type', 'image');
      form.append('file', new Blob([Buffer.alloc(50_000, 1)]), 'a.jpg');
      const { body, contentType } = await encodeForm(form);
      const c = await openRaw(`http://127.0.0.1:${(server.address() as { port: number }).port}`);
      c.write(
        `POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: ${contentType}\r\n` +
          `Content-Length: ${body.length - 100}\r\n\r\n`,
      );
      c.write(body);
      const r = await c.reply();
      assert.equal(r.status, 400);
      await c.closed();
      await until(() => settled.length > 0);
      assert.deepEqual(settled, [{ status: 400, error: 'the connection closed before the request body was read' }]);
      assert.deepEqual(await readdir(root), [], 'the temp directory is gone');
    } finally {
      server.close();
      await rm(root, { recursive: true, force: true });
    }
  },
);
