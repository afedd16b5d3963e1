/**
 * AI_POLICY and the `ai` filter as rules (issue 50), over arbitrary input: whatever the reader found, a label (and a
 * hold, a refusal) comes only from a marker that says generated; the owner never removes a marker's label; and the
 * `ai` query value is taken only as `exclude` or `only`, anything else refused naming the parameter.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { AppError } from '../../src/domain/errors.ts';
import { aiDecision, ownerLabel, type AiLabel } from '../../src/domain/uploads/ai-label.ts';
import { IPTC_SOURCE_TYPES, provenanceOf, type C2paSummary } from '../../src/domain/uploads/provenance.ts';
import { FeedQuery } from '../../src/gateway/schemas/community.schemas.ts';

const term = fc.oneof(fc.constantFrom(...IPTC_SOURCE_TYPES), fc.constant(null));
const c2pa: fc.Arbitrary<C2paSummary | null> = fc.option(
  fc.record({
    present: fc.constant(true),
    valid: fc.constantFrom(true, false, null),
    generator: fc.option(fc.string()),
    signer: fc.option(fc.string()),
    actions: fc.array(
      fc.record({
        action: fc.constantFrom('c2pa.created', 'c2pa.edited', 'c2pa.opened'),
        digital_source_type: term,
        software_agent: fc.option(fc.string()),
        when: fc.constant(null),
      }),
      { maxLength: 4 },
    ),
  }),
);
const provenance = fc.tuple(term, c2pa).map(([t, c]) => provenanceOf(t, c));

const code = (f: () => unknown): string | null => {
  try {
    f();
    return null;
  } catch (e) {
    assert.ok(e instanceof AppError, String(e));
    return e.code;
  }
};

test('every policy acts only on a marker that says generated; off keeps nothing', () => {
  fc.assert(
    fc.property(provenance, (p) => {
      const generated = p.ai_generated === true;
      const label = aiDecision('label', p);
      assert.equal(label.aiLabel, generated ? 'marker' : null);
      assert.deepEqual([label.provenance, label.hold], [p, null]);
      const hold = aiDecision('hold', p);
      assert.equal(hold.hold !== null, generated);
      if (hold.hold) assert.match(hold.hold, /^AI-generated: (C2PA manifest|IPTC DigitalSourceType)/);
      assert.equal(
        code(() => aiDecision('reject', p)),
        generated ? 'ai_generated' : null,
      );
      assert.deepEqual(aiDecision('off', p), { provenance: null, aiLabel: null, hold: null });
    }),
  );
});

test("the owner adds a label and removes only their own: a marker's stays, false on it is 400", () => {
  fc.assert(
    fc.property(fc.constantFrom<AiLabel | null>('marker', 'owner', null), fc.boolean(), provenance, (now, on, p) => {
      if (on) assert.equal(ownerLabel(now, true, p), now ?? 'owner');
      else if (now === 'marker')
        assert.equal(
          code(() => ownerLabel(now, false, p)),
          'invalid_request',
        );
      else assert.equal(ownerLabel(now, false, p), null);
    }),
  );
});

test('the ai query value: exclude or only; anything else 400 naming ai', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.constantFrom('only', 'exclude', 'ONLY', ' only', '')), (value) => {
      const r = FeedQuery.safeParse({ ai: value });
      if (value === 'only' || value === 'exclude') assert.equal(r.success && r.data.ai, value);
      else {
        assert.equal(r.success, false, JSON.stringify(value));
        assert.match(r.error.issues.map((i) => i.message).join(), /ai must be exclude or only/);
      }
    }),
  );
});
