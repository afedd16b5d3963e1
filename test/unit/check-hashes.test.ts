/** The batch pre-check's rule: blocked before exists, the viewer's visibility, request order, two lookups. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { checkHashes, type HashCheckPorts } from '../../src/domain/uploads/check-hashes.ts';
import type { Principal } from '../../src/domain/users.ts';
import type { Viewer } from '../../src/domain/uploads/upload.types.ts';

const hex = (c: string) => c.repeat(64);
const A = hex('a');
const B = hex('b');
const C = hex('c');

const caller: Principal = {
  userId: 'u1',
  username: 'mira',
  isAdmin: false,
  accountCreatedAt: new Date(0),
  method: 'api_token',
  viaCookie: false,
};

/** Uploads by digest with who may see them; a blocklist; and a record of the lookups made. */
function ports(stored: Record<string, { id: string; visibleTo: (v: Viewer) => boolean }>, blocked: string[]) {
  const calls: { uploads: string[][]; blocklist: string[][] } = { uploads: [], blocklist: [] };
  const p: HashCheckPorts = {
    uploads: {
      visibleIdsBySha256: async (sha256s, viewer) => {
        calls.uploads.push([...sha256s]);
        const m = new Map<string, string>();
        for (const s of sha256s) if (stored[s]?.visibleTo(viewer)) m.set(s, stored[s].id);
        return m;
      },
    },
    blocklist: {
      blockedSha256Among: async (sha256s) => {
        calls.blocklist.push([...sha256s]);
        return new Set(sha256s.filter((s) => blocked.includes(s)));
      },
    },
  };
  return { p, calls };
}

describe('batch pre-check', () => {
  test('answers in request order: blocked, exists with the upload id, new', async () => {
    const { p } = ports({ [B]: { id: 'up-b', visibleTo: () => true } }, [A]);
    const answer = await checkHashes(p, caller, [C, B, A]);
    assert.deepEqual(answer, [
      { sha256: C, status: 'new', uploadId: null },
      { sha256: B, status: 'exists', uploadId: 'up-b' },
      { sha256: A, status: 'blocked', uploadId: null },
    ]);
  });

  test('a blocklisted digest is blocked even if an upload of it exists (an upload would be refused)', async () => {
    const { p, calls } = ports({ [A]: { id: 'up-a', visibleTo: () => true } }, [A]);
    assert.deepEqual(await checkHashes(p, caller, [A]), [{ sha256: A, status: 'blocked', uploadId: null }]);
    assert.deepEqual(calls.uploads, [], 'nothing left to look up among uploads');
  });

  test('an upload the caller may not see is new to them (the store’s visibility for this viewer)', async () => {
    const others = { id: 'up-a', visibleTo: (v: Viewer) => v.userId === 'someone-else' || v.isAdmin };
    assert.equal((await checkHashes(ports({ [A]: others }, []).p, caller, [A]))[0]?.status, 'new');
    const admin = { ...caller, isAdmin: true };
    assert.equal((await checkHashes(ports({ [A]: others }, []).p, admin, [A]))[0]?.status, 'exists');
  });

  test('repeats are answered each time but looked up once; one lookup per port whatever the count', async () => {
    const { p, calls } = ports({ [B]: { id: 'up-b', visibleTo: () => true } }, []);
    const answer = await checkHashes(p, caller, [B, A, B, A]);
    assert.deepEqual(
      answer.map((r) => r.status),
      ['exists', 'new', 'exists', 'new'],
    );
    assert.deepEqual(calls.blocklist, [[B, A]]);
    assert.deepEqual(calls.uploads, [[B, A]]);
  });
});
