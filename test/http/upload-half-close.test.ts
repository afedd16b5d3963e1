/**
 * A client that half-closes its connection (sends FIN: "no more requests from me") right after a complete
 * multipart upload still reads the answer: the upload is stored and answered 201, then the server closes.
 * A half-close is not a cancel: a client that goes away for good (reset, destroy) still cancels, see
 * upload-cancel.test.ts. A half-close in the middle of the body is a body cut short: nothing is stored.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { countUploads, diskState } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { encodeForm, openRaw } from '../support/raw-http.ts';
import { until } from '../support/budget.ts';

describe('a client that half-closes after its request', () => {
  let app: TestApp;
  let user: TestUser;
  before(async () => {
    app = await startApp();
    user = await registerUser(app.api);
  });
  after(() => app?.close());

  async function rawUpload(seed: number) {
    const form = new FormData();
    form.append('upload_type', 'image');
    form.append('file', new Blob([await photoJpeg({ width: 640, height: 480, seed })]), 'half.jpg');
    const { body, contentType } = await encodeForm(form);
    const head =
      `POST /api/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${user.token}\r\n` +
      `Content-Type: ${contentType}\r\nContent-Length: ${body.length}\r\n\r\n`;
    return { head, body, conn: await openRaw(app.url) };
  }

  test('a complete upload then FIN: 201, the upload stored, then the server closes', async () => {
    const rows = await countUploads(app);
    const { head, body, conn } = await rawUpload(2701);
    conn.write(head);
    conn.write(body);
    conn.socket.end(); // half-close: this side writes no more, still reads
    const r = await conn.finalReply();
    assert.equal(r.status, 201, r.text);
    assert.equal(await countUploads(app), rows + 1, 'the upload is stored');
    assert.equal((await app.api.get(`/api/upload/${r.body.id}`)).status, 200);
    await conn.closed();
  });

  test('FIN in the middle of the body: nothing is stored, nothing left behind', async () => {
    const rows = await countUploads(app);
    const { head, body, conn } = await rawUpload(2702);
    conn.write(head);
    conn.write(body.subarray(0, body.length >> 1));
    conn.socket.end();
    await conn.closed();
    // The server has seen the cut-short body by now; its clean-up runs after (however long the machine takes).
    await until(async () => (await diskState(app)).tmp.length === 0);
    assert.equal(await countUploads(app), rows);
    assert.deepEqual((await diskState(app)).tmp, []);
  });
});
