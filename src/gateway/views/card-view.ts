/**
 * An upload's card, as the feed, a user's page, the profile and the moderation queue show it: thumbnail (or link
 * card), title, counts (vote buttons for a signed-in visitor), badges, author, age, tags. One definition: the
 * server writes it into the feed's first page, the browser builds it (web/lib/cards.js, which then paints the
 * ThumbHash placeholder and makes the buttons work). No style attribute (the pages' CSP has no 'unsafe-inline').
 */
import { h, type VNode } from './vnode.ts';
import { ago, hostOf, utcDate } from './words.ts';

/** An upload as the API shows it (API.md, "Upload"): only the fields the pages read are named. */
export interface Tag {
  name: string;
  slug: string;
}
export interface Upload {
  id: string;
  user_id: string;
  username: string;
  upload_type: 'image' | 'link';
  description: string | null;
  original_name: string | null;
  external_url: string | null;
  is_private: boolean;
  moderation?: string | null;
  upvotes: number;
  downvote_count: number;
  my_vote?: string | null;
  created_at: string;
  tags?: Tag[];
  image: { url: string; thumbnail_url: string; width: number; height: number; thumbhash: string | null } | null;
  embed?: { provider: string | null; embed_url: string | null } | null;
  /** What the "Made with AI" label rests on (API.md "Provenance"): a marker in the file, the owner, none. */
  ai_label?: 'marker' | 'owner' | null;
  provenance?: {
    source_type: string | null;
    c2pa: {
      present: boolean;
      valid: boolean | null;
      /** The signer chains to a configured trust anchor (null: none configured). */
      trusted?: boolean | null;
      signer: string | null;
      actions: Array<{ digital_source_type: string | null }>;
    } | null;
  } | null;
}

/**
 * The IPTC terms that say generated: src/domain/uploads/provenance.ts's GENERATED_SOURCE_TYPES, repeated because this
 * view is also served to the browser as a module of web/lib, where the domain's modules are not (a unit test,
 * web-views.test.ts, keeps the two the same).
 */
export const GENERATED = ['trainedAlgorithmicMedia', 'compositeWithTrainedAlgorithmicMedia', 'algorithmicMedia'];

/**
 * A C2PA manifest's signer with how far it was checked: "Acme", "Acme (not verified)", "Acme (invalid)", and
 * "Acme (untrusted signer)" for a valid manifest whose signer is not among the configured trust anchors.
 */
function signerText(c: { valid: boolean | null; trusted?: boolean | null; signer: string | null }): string {
  const who = c.signer || 'unknown signer';
  if (c.valid === true) return c.trusted === false ? `${who} (untrusted signer)` : who;
  return `${who} (${c.valid === false ? 'invalid' : 'not verified'})`;
}

/**
 * The provenance labels, each saying what it rests on: "Made with AI (C2PA manifest, signed by Acme)", "Made with
 * AI (IPTC metadata in the file)" or "Made with AI (marked by the uploader)"; and "Content Credentials: <signer>"
 * whenever a C2PA manifest is present. Null when there is neither: no label is claimed without a marker.
 */
export function provenanceLabels(u: Upload): VNode | null {
  const c2pa = u.provenance?.c2pa?.present ? u.provenance.c2pa : null;
  let basis: string | null = null;
  if (u.ai_label === 'owner') basis = 'marked by the uploader';
  else if (u.ai_label === 'marker') {
    const byC2pa = c2pa?.actions.some((a) => GENERATED.includes(a.digital_source_type ?? ''));
    basis = byC2pa && c2pa ? `C2PA manifest, signed by ${signerText(c2pa)}` : 'IPTC metadata in the file';
  }
  if (!basis && !c2pa) return null;
  return h(
    'span',
    { class: 'provenance' },
    basis ? h('span', { class: 'badge ai' }, `Made with AI (${basis})`) : null,
    c2pa ? h('span', { class: 'badge cr' }, `Content Credentials: ${signerText(c2pa)}`) : null,
  );
}

/** Who the card is for and the time its age is told from (ms). */
export interface CardContext {
  signedIn: boolean;
  now: number;
}

/** A user's page (`/u/{username}`): their public uploads. */
export function userPath(username: string): string {
  return `/u/${encodeURIComponent(username)}`;
}

/** A size that fits in `max` × `max`, the proportions kept. */
export function fit(width: number, height: number, max: number): { width: number; height: number } {
  const scale = Math.min(1, max / Math.max(width, height, 1));
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/** An upload's title: its description (cut at 90), else the link's host or the file's name. */
export function titleOf(u: Upload): string {
  const d = u.description?.trim();
  if (d) return d.length > 90 ? `${d.slice(0, 89)}…` : d;
  if (u.upload_type === 'link') return hostOf(u.external_url) || 'Link';
  return u.original_name || 'Untitled image';
}

/** An upload's tags as links to their feeds, or null for none. */
export function tagList(tags: Tag[] | null | undefined): VNode | null {
  if (!tags?.length) return null;
  return h(
    'ul',
    { class: 'tags', 'aria-label': 'Tags' },
    tags.map((t) => h('li', {}, h('a', { href: `/?tag=${encodeURIComponent(t.slug)}` }, t.name))),
  );
}

/** An upload's age: `<time>` with the relative text, its full date as the title. */
export function ageView(iso: string, now: number): VNode {
  return h('time', { datetime: iso, title: utcDate(iso) }, ago(iso, now));
}

/** One vote button, named by its content ("Upvote <title>, upvotes: 3": the visible count is in the name). */
function voteButton(u: Upload, title: string, up: boolean): VNode {
  const [value, verb, mark, kind, n] = up
    ? (['fucks', 'Upvote', '▲ ', 'up', u.upvotes] as const)
    : (['does_not_fuck', 'Downvote', '▼ ', 'down', u.downvote_count] as const);
  return h(
    'button',
    { type: 'button', class: `vote ${value}`, 'aria-pressed': String(u.my_vote === value) },
    h('span', { class: 'sr' }, `${verb} ${title}, ${kind}votes: `),
    h('span', { 'aria-hidden': 'true' }, mark),
    h('span', { class: `n-${kind}` }, n),
  );
}

/** One count as text, for a visitor who is not signed in. */
function countText(kind: 'up' | 'down', mark: string, n: number): VNode {
  return h(
    'span',
    { class: kind, title: `${kind}votes` },
    mark,
    h('span', { class: 'sr' }, `${kind}votes: `),
    h('span', { class: `n-${kind}` }, n),
  );
}

/** The counts: vote buttons showing the visitor's vote (`my_vote`) when signed in; for others, text. */
function counts(u: Upload, signedIn: boolean): VNode[] {
  if (signedIn) {
    const title = titleOf(u);
    return [voteButton(u, title, true), voteButton(u, title, false)];
  }
  return [countText('up', '▲ ', u.upvotes), countText('down', '▼ ', u.downvote_count)];
}

/** A card; `eager` for the thumbnails above the fold (loaded first, decoded at once). */
export function cardView(u: Upload, eager: boolean, { signedIn, now }: CardContext): VNode {
  let media;
  if (u.upload_type === 'image' && u.image) {
    const size = fit(u.image.width, u.image.height, 320);
    media = h('img', {
      src: u.image.thumbnail_url,
      alt: u.description || u.original_name || 'Image',
      width: size.width,
      height: size.height,
      loading: eager ? 'eager' : 'lazy',
      fetchpriority: eager ? 'high' : null,
      decoding: eager ? 'sync' : 'async',
    });
  } else {
    media = h(
      'span',
      { class: 'linkcard' },
      h('span', { class: 'provider' }, u.embed?.provider ?? 'link'),
      h('span', { class: 'host' }, hostOf(u.external_url)),
    );
  }
  return h(
    'li',
    { class: 'card' },
    h(
      'a',
      { class: 'cardlink', href: `/uploads/${encodeURIComponent(u.id)}` },
      media,
      h('span', { class: 'title' }, titleOf(u)),
    ),
    h(
      'p',
      { class: 'meta' },
      counts(u, signedIn),
      u.is_private ? h('span', { class: 'badge' }, 'Private') : null,
      u.moderation && u.moderation !== 'visible' ? h('span', { class: 'badge warn' }, u.moderation) : null,
      provenanceLabels(u),
      h('span', { class: 'by' }, 'by ', h('a', { href: userPath(u.username) }, u.username)),
      ageView(u.created_at, now),
    ),
    tagList(u.tags),
  );
}
