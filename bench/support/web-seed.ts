/**
 * A running app with realistic community data, for the benchmarks and scripts that look at the web pages
 * (bench/lighthouse.bench.ts, bench/screenshots.ts): the server as `npm start` runs it (`node src/main.ts`, its
 * own process) on a temporary data directory (SQLite), seeded through the HTTP API as people would: four users,
 * generated images (the fixtures' photo-like scenes: sky, ground, shapes; never people) with descriptions and
 * tags, a link upload, votes from everyone, and an admin's hold and removal, so /modlog has lines.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { pngImage } from '../../test/support/fixtures.ts';
import { spawnServer, type ServerProcess } from '../../test/support/process.ts';
import { uploadFields, uploadImage } from '../../test/support/uploads.ts';
import { registerUser, type TestUser } from '../../test/support/users.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface SeededApp {
  server: ServerProcess;
  /** A public image upload with a description and tags, and a link upload. */
  imageId: string;
  linkId: string;
  /** The uploader of both, and a tag they carry. */
  username: string;
  tagSlug: string;
  /** A signed-in visitor's token (a voter). */
  visitor: TestUser;
  stop(): Promise<void>;
}

const PICTURES: Array<[string, string]> = [
  ['Evening over the salt flats, rendered from seed 11', 'landscape, generated'],
  ['A red kite over a green valley, in flat shapes', 'landscape, shapes'],
  ['Noise study no. 3: warm sky, cold ground', 'noise, generated'],
  ['Low horizon, tall sky', 'landscape, colour'],
  ['Dusk palette with three squares', 'colour, shapes'],
  ['Morning haze over a generated lake', 'landscape, noise'],
  ['Grain and gradients', 'noise, colour'],
  ['High horizon after rain', 'landscape, generated'],
  ['Shapes at noon', 'shapes, generated'],
  ['Fog bank, seed 20', 'noise, landscape'],
  ['Autumn colours, no trees', 'colour, generated'],
  ['Night sky test card', 'shapes, colour'],
];

/** The server's environment for the web benchmarks: no person detection, limits no seeding or browser meets. */
export const webBenchEnv = (dataDir: string): Record<string, string> => ({
  DATA_DIR: dataDir,
  HUMAN_POLICY: 'off',
  RATE_LIMIT_AUTH: '1000/15m',
  RATE_LIMIT_GENERAL: '100000/15m',
  RATE_LIMIT_MEDIA: '100000/15m',
  RATE_LIMIT_UPLOAD: '1000/1h',
});

export async function startSeededApp(opts: { pictures?: number } = {}): Promise<SeededApp> {
  const dataDir = await mkdtemp(join(tmpdir(), 'pixvote-web-seed-'));
  const env = webBenchEnv(dataDir);
  const server = await spawnServer(env);
  const stop = async () => {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const api = server.api;
    const [mira, jon, ines, mod] = [
      await registerUser(api, 'mira'),
      await registerUser(api, 'jon_k'),
      await registerUser(api, 'ines'),
      await registerUser(api, 'mod_sam'),
    ];
    // Made admin as an operator does, on the server's database.
    await promisify(execFile)(process.execPath, ['bin/pixvote.js', 'admin', 'grant', mod.username], {
      cwd: ROOT,
      env: { ...process.env, ...env },
    });
    const uploaders = [mira, jon, ines];
    const ids: string[] = [];
    const count = Math.min(opts.pictures ?? PICTURES.length, PICTURES.length);
    for (let i = 0; i < count; i++) {
      const [description, tags] = PICTURES[i]!;
      const r = await uploadImage(
        api,
        uploaders[i % 3]!.token,
        await pngImage(800 + (i % 4) * 160, 600 + (i % 3) * 90, 11 + i),
        { description, tags },
        `scene-${11 + i}.png`,
      );
      assert.equal(r.status, 201, r.text);
      ids.push(r.body.id);
    }
    const link = await uploadFields(api, mira.token, {
      upload_type: 'link',
      external_url: 'https://www.youtube.com/watch?v=dQw4w9WgXcQ',
      description: 'The music video everyone has seen at least once',
      tags: 'music, video',
    });
    assert.equal(link.status, 201, link.text);
    // Votes: everyone on a few, so the sorts differ.
    for (const [n, voter] of [jon, ines, mod].entries()) {
      for (const [i, id] of [...ids, link.body.id as string].entries()) {
        if ((i + n) % 3 === 0) continue;
        const vote = (i * 7 + n) % 4 === 0 ? 'does_not_fuck' : 'fucks';
        const v = await api.post('/api/vote', { uploadId: id, vote }, { token: voter.token });
        assert.equal(v.status, 200, v.text);
      }
    }
    // Moderation: one upload held, a spam link removed, so the public log has lines.
    const spam = await uploadFields(api, ines.token, {
      upload_type: 'link',
      external_url: 'https://example.com/cheap-watches',
      description: 'Cheap watches, click here',
    });
    assert.equal(spam.status, 201, spam.text);
    for (const [id, action, reason] of [
      [ids.at(-1)!, 'hold', 'Looks like a duplicate of another scene; holding while we check'],
      [spam.body.id as string, 'remove', 'Spam: advertising'],
    ] as const) {
      const r = await api.post(`/api/admin/uploads/${id}/moderation`, { action, reason }, { token: mod.token });
      assert.equal(r.status, 200, r.text);
    }
    return {
      server,
      imageId: ids[0]!,
      linkId: link.body.id,
      username: mira.username,
      tagSlug: 'landscape',
      visitor: jon,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
